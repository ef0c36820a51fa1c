/**
 * The norm group's behaviours the random conformance cases cannot reach: dropout's mask (CPU kernel,
 * float64 reference and philox_fill agree bit for bit, including at the threshold), bad labels and bad
 * token ids, the cases' ignored targets, and malformed calls with their stable codes.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type DType, bytesPerElement, hostView } from '../../src/core/dtype.js';
import { type ErrorCode, isTandemError } from '../../src/core/errors.js';
import { numel } from '../../src/core/shape.js';
import type { Scalars, TensorDesc } from '../../src/devices/device.js';
import type { CpuArg } from '../../src/devices/cpu/kernel-api.js';
import { CONFORMANCE_CASES } from '../../src/kernels/conformance-cases.js';
import { prepareCase } from '../../src/kernels/conformance.js';
import { dropoutParams } from '../../src/kernels/common/norm-checks.js';
import { referenceKeepMask } from '../../src/kernels/dropout/reference.js';
import { u32ToUniform } from '../../src/kernels/mc_common/philox.js';
import { cpuContext, cpuKernelOf, defOf, runCpuCase } from './cpu-harness.js';
import { NN_NORM_GPU_CASES } from './nn-norm-gpu-cases.js';

function desc(shape: number[], dtype: DType = 'f32'): TensorDesc {
  return { shape, dtype, bytes: numel(shape) * bytesPerElement(dtype) };
}

function cpuArg(shape: number[], dtype: DType, values?: ArrayLike<number>): CpuArg {
  const d = desc(shape, dtype);
  const data = hostView(dtype, new SharedArrayBuffer(d.bytes), 0, numel(shape));
  if (values !== undefined) (data as Float32Array).set(values);
  return { data, desc: d };
}

function run(op: string, args: CpuArg[], scalars: Scalars): void {
  cpuKernelOf(op)(args, scalars, cpuContext('ts'));
}

/** The CPU kernel's mask: dropout of ones, kept where the output is not 0. */
function cpuMask(n: number, scalars: Scalars): Uint8Array {
  const y = cpuArg([n], 'f32');
  run('dropout', [cpuArg([n], 'f32', new Float32Array(n).fill(1)), y], scalars);
  return Uint8Array.from(y.data as Float32Array, (v) => (v !== 0 ? 1 : 0));
}

/** philox_fill's words of streams [first, first + count), block 0, as unsigned numbers. */
function philoxFillWords(first: number, count: number, k0: number, k1: number): Uint32Array {
  const out = cpuArg([count, 4], 'i32');
  run('philox_fill', [out], { first, block: 0, k0, k1 });
  return new Uint32Array((out.data as Int32Array).buffer);
}

void describe('dropout mask', () => {
  void it('CPU kernel and float64 reference keep exactly the same elements', () => {
    const runs: readonly (Scalars & { p: number })[] = [
      { p: 0.1, seed: 1 },
      { p: 0.5, seed: 2 ** 33 + 3, offset: 7 },
      { p: 0.9, seed: 5, offset: 2 ** 40 + 1 },
    ];
    for (const scalars of runs) {
      const n = 20011;
      const cpu = cpuMask(n, scalars);
      assert.deepEqual(cpu, referenceKeepMask('dropout', scalars, n));
      const dropped = cpu.reduce((s, k) => s + (1 - k), 0) / n;
      assert.ok(Math.abs(dropped - scalars.p) < 0.015, `dropped ${dropped} for p ${scalars.p}`);
    }
  });

  void it('at the threshold: u = p keeps, p just above u drops, on both sides', () => {
    const words = philoxFillWords(0, 1, 3, 0);
    const u = u32ToUniform(words[0]!);
    for (const [p, kept] of [
      [u, 1],
      [u + 2 ** -30, 0],
    ] as const) {
      const scalars = { p, seed: 3 };
      assert.equal(cpuMask(1, scalars)[0], kept, `cpu at p = ${p}`);
      assert.equal(referenceKeepMask('dropout', scalars, 1)[0], kept, `reference at p = ${p}`);
      assert.equal(dropoutParams('dropout', scalars).threshold <= words[0]! >>> 9, kept === 1);
    }
  });

  void it('uses philox_fill counter layout: element e is word e mod 4 of stream floor(e / 4)', () => {
    const seed = 2 ** 32 * 3 + 11;
    const offset = 10;
    const n = 29;
    const first = Math.floor(offset / 4);
    const words = philoxFillWords(first, Math.ceil((offset + n) / 4) - first, 11, 3);
    const p = 0.5;
    const want = Uint8Array.from({ length: n }, (_, i) =>
      u32ToUniform(words[offset + i - 4 * first]!) >= p ? 1 : 0,
    );
    assert.deepEqual(cpuMask(n, { p, seed, offset }), want);
  });

  void it('dropout_backward drops what dropout dropped and scales by 1/(1 - p)', () => {
    const n = 101;
    const scalars = { p: 0.25, seed: 99, offset: 3 };
    const dx = cpuArg([n], 'f64', new Float64Array(n).fill(5));
    run('dropout_backward', [cpuArg([n], 'f64', new Float64Array(n).fill(3)), dx], {
      ...scalars,
      accumulate: true,
    });
    const mask = cpuMask(n, scalars);
    (dx.data as Float64Array).forEach((v, i) => assert.equal(v, mask[i] === 1 ? 5 + 3 / 0.75 : 5));
  });
});

void describe('softmax_xent and embedding edge cases', () => {
  void it('a target outside [-1, V) gives a NaN loss and a NaN gradient row; padding stays 0', () => {
    const logits = cpuArg(
      [3, 6],
      'f32',
      Float32Array.from({ length: 18 }, (_, i) => Math.sin(i)),
    );
    const losses = cpuArg([3], 'f32');
    run('softmax_xent', [logits, cpuArg([3], 'i32', [4, 5, -2]), losses], { vocab: 5 });
    const l = losses.data as Float32Array;
    assert.ok(Number.isFinite(l[0]) && Number.isNaN(l[1]) && Number.isNaN(l[2]));
    const g = logits.data as Float32Array;
    for (const row of [1, 2]) {
      assert.ok(g.subarray(row * 6, row * 6 + 5).every(Number.isNaN));
      assert.equal(g[row * 6 + 5], 0);
    }
  });

  void it('the conformance cases draw ignored targets (-1) and real ones', () => {
    const c = CONFORMANCE_CASES.find((x) => x.op === 'softmax_xent' && x.name.includes('[31,8]'))!;
    const targets = prepareCase(defOf('softmax_xent'), c).initial.targets as Int32Array;
    assert.ok(targets.includes(-1) && targets.some((t) => t >= 0), `targets ${targets.join(' ')}`);
  });

  void it('an id outside [0, V) gives a NaN embedding row and no gradient', () => {
    const ids = cpuArg([1, 2], 'i32', [1, 9]);
    const y = cpuArg([1, 2, 2], 'f32');
    run(
      'embedding',
      [ids, cpuArg([3, 2], 'f32', [1, 2, 3, 4, 5, 6]), cpuArg([2, 2], 'f32', [10, 20, 30, 40]), y],
      {},
    );
    assert.deepEqual(Array.from(y.data as Float32Array).slice(0, 2), [13, 24]);
    assert.ok((y.data as Float32Array).subarray(2).every(Number.isNaN));
    const dwte = cpuArg([3, 2], 'f32');
    const dwpe = cpuArg([2, 2], 'f32');
    run('embedding_backward', [ids, cpuArg([1, 2, 2], 'f32', [1, 1, 2, 2]), dwte, dwpe], {});
    assert.deepEqual(Array.from(dwte.data as Float32Array), [0, 0, 1, 1, 0, 0]);
    assert.deepEqual(Array.from(dwpe.data as Float32Array), [1, 1, 2, 2]);
  });
});

interface Bad {
  readonly op: string;
  readonly args: Record<string, TensorDesc>;
  readonly scalars: Scalars;
  readonly code: ErrorCode;
  readonly why: string;
}

const x = desc([4, 6]);
const v6 = desc([6]);
const st = desc([4]);
const ln = { x, w: v6, b: v6, y: x, mean: st, rstd: st };
const emb = { ids: desc([2, 3], 'i32'), wte: desc([5, 4]), wpe: desc([3, 4]), y: desc([2, 3, 4]) };
const xent = { logits: desc([4, 10]), targets: desc([4], 'i32'), losses: desc([4]) };

const BAD: readonly Bad[] = [
  { why: 'w not [C]', op: 'layernorm', args: { ...ln, w: desc([5]) }, scalars: {}, code: 'TANDEM_ERR_SHAPE' },
  {
    why: 'f16 stats',
    op: 'layernorm',
    args: { ...ln, mean: desc([4], 'f16') },
    scalars: {},
    code: 'TANDEM_ERR_DTYPE',
  },
  {
    why: 'negative eps',
    op: 'layernorm',
    args: ln,
    scalars: { eps: -1 },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  { why: 'rank-1 x', op: 'layernorm', args: { ...ln, x: v6, y: v6 }, scalars: {}, code: 'TANDEM_ERR_SHAPE' },
  {
    why: 's of another shape',
    op: 'residual_layernorm',
    args: { a: x, r: x, s: desc([4, 5]), w: v6, b: v6, y: x, mean: st, rstd: st },
    scalars: {},
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'unknown scalar',
    op: 'layernorm_backward',
    args: { dy: x, x, w: v6, mean: st, rstd: st, dx: x, dw: v6, db: v6 },
    scalars: { accumulat: true },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'f32 ids',
    op: 'embedding',
    args: { ...emb, ids: desc([2, 3]) },
    scalars: {},
    code: 'TANDEM_ERR_DTYPE',
  },
  {
    why: 'P < T',
    op: 'embedding',
    args: { ...emb, wpe: desc([2, 4]) },
    scalars: {},
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'dwte of another dtype',
    op: 'embedding_backward',
    args: { ids: emb.ids, dy: emb.y, dwte: desc([5, 4], 'f64'), dwpe: emb.wpe },
    scalars: {},
    code: 'TANDEM_ERR_DTYPE',
  },
  {
    why: 'vocab > Vp',
    op: 'softmax_xent',
    args: xent,
    scalars: { vocab: 11 },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'f16 losses',
    op: 'softmax_xent',
    args: { ...xent, losses: desc([4], 'f16') },
    scalars: {},
    code: 'TANDEM_ERR_DTYPE',
  },
  {
    why: 'i32 targets missing rows',
    op: 'softmax_xent',
    args: { ...xent, targets: desc([3], 'i32') },
    scalars: {},
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'p = 1',
    op: 'dropout',
    args: { x, y: x },
    scalars: { p: 1, seed: 1 },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'negative seed',
    op: 'dropout',
    args: { x, y: x },
    scalars: { p: 0.1, seed: -1 },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'dx of another dtype',
    op: 'dropout_backward',
    args: { dy: x, dx: desc([4, 6], 'f64') },
    scalars: { p: 0.1, seed: 1 },
    code: 'TANDEM_ERR_DTYPE',
  },
];

void describe('norm group validation', () => {
  for (const b of BAD) {
    void it(`${b.op}: ${b.why} is ${b.code}`, () => {
      assert.throws(
        () => defOf(b.op).validate(b.args, b.scalars),
        (e: unknown) => isTandemError(e, b.code) && (e as Error).message.startsWith(`${b.code}: ${b.op}: `),
      );
    });
  }
  void it('well-formed calls pass', () => {
    defOf('layernorm').validate(ln, {});
    defOf('embedding').validate(emb, {});
    defOf('softmax_xent').validate(xent, { vocab: 7, gradScale: 0.5 });
    defOf('dropout').validate({ x, y: x }, { p: 0.1, seed: 1 });
  });
});

void describe('the model-size cases of test/gpu/nn-norm-cuda.test.ts, on the CPU', () => {
  for (const c of NN_NORM_GPU_CASES) {
    void it(c.name, () => {
      assert.deepEqual(runCpuCase(c, 'ts'), []);
    });
  }
});
