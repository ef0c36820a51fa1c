/**
 * WebGPU through the Runtime, the way users reach it: tensors move host -> webgpu0 -> cpu through the
 * copy table, chained tasks run on the WebGPU queue, and a dtype WGSL cannot hold is never placed there.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { toNumbers } from '../../src/core/dtype.js';
import { isTandemError } from '../../src/core/errors.js';
import { numel } from '../../src/core/shape.js';
import type { WgslCustomKernel } from '../../src/devices/webgpu/kernel-api.js';
import type { KernelDef } from '../../src/kernels/kernel.js';
import { Runtime } from '../../src/runtime/runtime.js';
import type { SequenceStep } from '../../src/runtime/sequence.js';
import { openWebGpu } from './harness.js';

// Probe once without the runtime so the skip reason is the backend's own.
const probe = await openWebGpu();
if (probe.ok) await probe.opened.device.close();
else console.log(`# webgpu runtime tests skipped: ${probe.reason}`);

function random(n: number): Float32Array {
  return Float32Array.from({ length: n }, () => (Math.random() < 0.5 ? -1 : 1) * (0.125 + Math.random()));
}

void describe('webgpu through the runtime', { skip: probe.ok ? false : probe.reason }, () => {
  let rt: Runtime;
  before(async () => {
    // A small staging chunk makes every transfer here move in several chunks.
    rt = await Runtime.create({
      backends: ['cpu', 'webgpu'],
      calibrate: false,
      options: { webgpu: { stagingChunkBytes: 4096 } },
    });
  });
  after(() => rt.close());

  void it('a sequence (gemm, relu, axpy) on webgpu0 equals the same kernels as tasks', async () => {
    const [m, k, n] = [19, 23, 17];
    const make = () => {
      const a = rt.tensor([m, k], 'f32', random(m * k));
      const b = rt.tensor([k, n], 'f32', random(k * n));
      const c = rt.tensor([m, n], 'f32', new Float32Array(m * n).fill(NaN));
      const r = rt.tensor([m, n], 'f32', new Float32Array(m * n).fill(NaN));
      const y = rt.tensor([m, n], 'f32', random(m * n));
      const steps: SequenceStep[] = [
        { kernel: 'gemm', args: { a, b, c }, scalars: { alpha: 1.5, beta: 0, transA: false, transB: false } },
        { kernel: 'unary', args: { x: c, y: r }, scalars: { op: 'relu' } },
        { kernel: 'axpy', args: { x: r, y }, scalars: { alpha: 2 } },
      ];
      return { a, b, y, steps };
    };
    const one = make();
    const two = make();
    // The same inputs on both sides.
    rt.submit({ kernel: 'copy', args: { x: one.a, y: two.a } });
    rt.submit({ kernel: 'copy', args: { x: one.b, y: two.b } });
    rt.submit({ kernel: 'copy', args: { x: one.y, y: two.y } });
    for (const step of one.steps) rt.submit({ ...step, device: 'webgpu' });
    const seq = rt.submitSequence({ steps: two.steps, device: 'webgpu' });
    await seq.done;
    assert.equal(seq.deviceId, 'webgpu0');
    const want = await rt.read(one.y);
    const got = await rt.read(two.y);
    assert.deepEqual(Array.from(got), Array.from(want));
    assert.ok(!Array.from(got).some(Number.isNaN));
  });

  void it('runs gemm then relu on webgpu0 and axpy on the cpu, matching float64', async () => {
    const [m, k, n] = [37, 29, 41];
    const A = random(m * k);
    const B = random(k * n);
    const Y = random(m * n);
    const a = rt.tensor([m, k], 'f32', A);
    const b = rt.tensor([k, n], 'f32', B);
    const c = rt.tensor([m, n], 'f32', new Float32Array(m * n).fill(NaN));
    const r = rt.tensor([m, n], 'f32', new Float32Array(m * n).fill(NaN));
    const y = rt.tensor([m, n], 'f32', Y);
    const scalars = { alpha: 1.5, beta: 0, transA: false, transB: false };
    rt.submit({ kernel: 'gemm', args: { a, b, c }, scalars, device: 'webgpu' });
    rt.submit({ kernel: 'unary', args: { x: c, y: r }, scalars: { op: 'relu' }, device: 'webgpu' });
    await rt.submit({ kernel: 'axpy', args: { x: r, y }, scalars: { alpha: 2 }, device: 'cpu' }).done;
    const got = await rt.read(y);
    for (let i = 0; i < m; i++)
      for (let j = 0; j < n; j++) {
        let dot = 0;
        let mag = 0;
        for (let p = 0; p < k; p++) {
          dot += A[i * k + p]! * B[p * n + j]!;
          mag += Math.abs(A[i * k + p]! * B[p * n + j]!);
        }
        const want = Y[i * n + j]! + 2 * Math.max(0, 1.5 * dot);
        const tol = 8 * k * 2 ** -23 * (1.5 * mag * 2 + Math.abs(want));
        assert.ok(Math.abs(got[i * n + j]! - want) <= tol, `y[${i},${j}] = ${got[i * n + j]}, want ${want}`);
      }
  });

  void it('lists the webgpu device with its adapter and reason-free status', () => {
    const status = rt.backends.find((s) => s.kind === 'webgpu');
    assert.equal(status?.available, true);
    const dev = rt.devices.find((d) => d.info.kind === 'webgpu');
    assert.ok(dev && dev.info.name.length > 0);
  });

  void it('runs a custom WGSL kernel registered with rt.registerKernel, and reports one that does not compile', async () => {
    const def: KernelDef = {
      name: 'wgsl_affine',
      args: [
        { name: 'x', mode: 'r' },
        { name: 'y', mode: 'w' },
      ],
      validate: () => undefined,
      cost: (args) => ({ flops: 2 * numel(args.x!.shape), bytes: 2 * args.x!.bytes }),
    };
    const kernel: WgslCustomKernel = {
      wgsl: `struct U { a: f32, b: f32, n: u32 }
@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read_write> Y: array<f32>;
@group(0) @binding(2) var<uniform> u: U;
@compute @workgroup_size(64)
fn affine(@builtin(global_invocation_id) g: vec3<u32>) {
  if (g.x < u.n) { Y[g.x] = u.a * X[g.x] + u.b; }
}`,
      entry: 'affine',
      workgroups: (args) => [Math.ceil(numel(args[0]!.shape) / 64), 1, 1],
      uniforms: [
        { name: 'a', type: 'f32' },
        { name: 'b', type: 'f32' },
        { name: 'n', type: 'u32' },
      ],
    };
    rt.registerKernel(def, { webgpu: kernel });
    const n = 1000;
    const X = random(n);
    const x = rt.tensor([n], 'f32', X);
    const y = rt.tensor([n], 'f32', new Float32Array(n).fill(NaN));
    await rt.submit({ kernel: 'wgsl_affine', args: { x, y }, scalars: { a: -3, b: 0.5, n } }).done;
    const got = await rt.read(y);
    for (let i = 0; i < n; i++) assert.ok(Math.abs(got[i]! - (-3 * X[i]! + 0.5)) <= 4e-7 * 4, `y[${i}]`);

    rt.registerKernel({ ...def, name: 'wgsl_broken' }, { webgpu: { ...kernel, wgsl: 'fn affine( {' } });
    await assert.rejects(
      rt.submit({ kernel: 'wgsl_broken', args: { x, y }, scalars: { a: 1, b: 0, n } }).done,
      (e: unknown) => isTandemError(e, 'TANDEM_ERR_COMPILE') && /expected/.test(e.message),
    );
  });

  void it('places f16 work on webgpu with or without shader-f16 (cast, square, read back)', async () => {
    const n = 999;
    const X = random(n);
    const x = rt.tensor([n], 'f32', X);
    const h = rt.tensor([n], 'f16');
    const sq = rt.tensor([n], 'f16');
    rt.submit({ kernel: 'cast', args: { x, y: h }, device: 'webgpu' });
    await rt.submit({ kernel: 'unary', args: { x: h, y: sq }, scalars: { op: 'square' }, device: 'webgpu' })
      .done;
    const got = toNumbers('f16', await rt.read(sq));
    for (let i = 0; i < n; i++) {
      const want = X[i]! * X[i]!;
      assert.ok(Math.abs(got[i]! - want) <= 3 * 2 ** -11 * want, `sq[${i}] = ${got[i]}, want ${want}`);
    }
  });

  void it('refuses an f16 onnx_conv on webgpu (its ONNX kernels are f32 only), naming the dtypes', async () => {
    const x = rt.tensor([1, 2, 5, 5], 'f16');
    const w = rt.tensor([3, 2, 3, 3], 'f16');
    const b = rt.tensor([3], 'f16');
    const y = rt.tensor([1, 3, 3, 3], 'f16');
    await assert.rejects(
      rt.submit({ kernel: 'onnx_conv', args: { x, w, b, y }, device: 'webgpu' }).done,
      (e: unknown) =>
        isTandemError(e, 'TANDEM_ERR_NO_DEVICE') && /onnx_conv.*on f16, f16, f16, f16/.test(e.message),
    );
  });

  void it('never places an f64 task on webgpu (no f64 in WGSL)', async () => {
    const x = rt.tensor([5], 'f64', [1, 2, 3, 4, 5]);
    await assert.rejects(
      rt.submit({ kernel: 'scale', args: { x }, scalars: { alpha: 2 }, device: 'webgpu' }).done,
      (e: unknown) => isTandemError(e, 'TANDEM_ERR_NO_DEVICE'),
    );
  });
});
