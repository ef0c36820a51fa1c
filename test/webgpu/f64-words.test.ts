/**
 * The WGSL f64 arithmetic on u32 words (src/kernels/onnx/webgpu-f64.ts, whose d_add serves f64
 * CumSum on WebGPU) against JavaScript's own double addition, bit for bit: operands drawn across the
 * exponent range, with subnormals, near-cancellation, ties (short fractions) and every pair of specials.
 * The conformance cases reach d_add only through short random sums.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { WebGpuKernel } from '../../src/devices/webgpu/kernel-api.js';
import { LINEAR_MAIN } from '../../src/kernels/common/webgpu.js';
import { F64_ADD_TEST_WGSL } from '../../src/kernels/onnx/webgpu-f64.js';
import { openWebGpu, runOnDevice } from './harness.js';

const N = 1 << 16;

const ADD_WGSL = `struct Params { n: u32 }
@group(0) @binding(0) var<storage, read> A: array<u32>;
@group(0) @binding(1) var<storage, read> B: array<u32>;
@group(0) @binding(2) var<storage, read_write> C: array<u32>;
@group(0) @binding(3) var<uniform> P: Params;
${F64_ADD_TEST_WGSL}${LINEAR_MAIN}
  if (i >= P.n) { return; }
  let r = d_add(vec2<u32>(A[2u * i], A[2u * i + 1u]), vec2<u32>(B[2u * i], B[2u * i + 1u]));
  C[2u * i] = r.x;
  C[2u * i + 1u] = r.y;
}
`;

const addKernel: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: () => true,
  plan: () => [
    {
      kind: 'dispatch',
      wgsl: ADD_WGSL,
      entry: 'main',
      bind: [0, 1, 2],
      uniforms: [{ type: 'u32', value: N }],
      workgroups: { linear: N / 256 },
    },
  ],
};

/** xorshift32: the same operands on every run. */
function rng(seed: number): () => number {
  let s = seed;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return s >>> 0;
  };
}

function operands(): [Float64Array, Float64Array] {
  const a = new Float64Array(N);
  const b = new Float64Array(N);
  const [aw, bw] = [new Uint32Array(a.buffer), new Uint32Array(b.buffer)];
  const r = rng(0x2545f491);
  const clampE = (e: number) => Math.max(0, Math.min(2047, e));
  for (let i = 0; i < N; i++) {
    const mode = i % 6;
    const ea = mode === 0 ? r() % 2048 : mode === 1 ? r() % 4 : 1003 + (r() % 40);
    const eb = mode === 1 ? r() % 4 : mode === 2 ? ea + (r() % 3) - 1 : ea + (r() % 131) - 65;
    aw[2 * i] = r();
    bw[2 * i] = mode === 3 ? r() & 0xff000000 : r();
    aw[2 * i + 1] = ((r() & 0x800fffff) | (clampE(ea) << 20)) >>> 0;
    bw[2 * i + 1] = ((r() & 0x800fffff) | (clampE(eb) << 20)) >>> 0;
    if (mode === 4) b[i] = -a[i] * (1 + (r() & 1 ? 2 ** -52 : 0));
  }
  const specials = [0, -0, Infinity, -Infinity, NaN, Number.MAX_VALUE, 5e-324, -5e-324, 2 ** -1022, 1, -1];
  let k = 0;
  for (const x of specials)
    for (const y of specials) {
      a[k] = x;
      b[k++] = y;
    }
  return [a, b];
}

const opened = await openWebGpu();
if (!opened.ok) console.log(`# webgpu f64 words skipped: ${opened.reason}`);

void describe('WGSL f64 on u32 words', { skip: opened.ok ? false : opened.reason }, () => {
  if (!opened.ok) return;
  const o = opened.opened;
  after(() => o.device.close());
  void it(`d_add matches JavaScript's double addition bit for bit (${N} pairs)`, async () => {
    const [a, b] = operands();
    const desc = { shape: [N], dtype: 'f64' as const, bytes: N * 8 };
    const outs = await runOnDevice(
      o,
      'f64_add_check',
      addKernel,
      [
        { desc, data: a },
        { desc, data: b },
        { desc, data: new Float64Array(N) },
      ],
      {},
    );
    const c = outs[2]!;
    const wrong: string[] = [];
    for (let i = 0; i < N; i++) {
      const want = a[i]! + b[i]!;
      const got = c[i]!;
      if (!Object.is(want, got) && !(want !== want && got !== got))
        wrong.push(`${a[i]} + ${b[i]} = ${want}, got ${got}`);
    }
    assert.deepEqual(wrong.slice(0, 5), []);
  });
});
