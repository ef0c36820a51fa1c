/**
 * Every optim conformance case through the CUDA kernels executed on the host emulator (cuda-emu/):
 * the real kernel text (prelude, defines, source), launch geometry and parameters, compiled by g++
 * and run one thread per CUDA thread, against the float64 references — on a machine without a GPU.
 * The GPU itself is checked by test/gpu/cuda-conformance.test.ts and test/gpu/nn-optim.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type HostArray, hostView } from '../../src/core/dtype.js';
import { numel } from '../../src/core/shape.js';
import type { CudaKernelImpl, CudaNative } from '../../src/devices/cuda/kernel-api.js';
import { checkCase, prepareCase } from '../../src/kernels/conformance.js';
import { optimGroup } from '../../src/kernels/nn/optim.js';
import { hostCudaUnavailable, runNativeOnHost } from './cuda-emu/host-cuda.js';

const unavailable = hostCudaUnavailable();
if (unavailable) console.log(`# skip optim CUDA emulation: ${unavailable}`);

function asNative(impl: CudaKernelImpl): CudaNative {
  if (impl.kind === 'native') return impl;
  return { kind: 'native', run: (ctx, args, scalars) => ctx.launch(impl, args, scalars) };
}

/**
 * Each case compiles its own executable (the launch parameters are baked into main()), so a selection:
 * every variant in f32 (adamw_hyper's too), every dtype for sumsq on several blocks, the mixed-precision path, and one case
 * per other dtype pairing. All 77 cases passed on 2026-12-03 (8 minutes on a loaded 2-core box).
 */
const EXTRA = [
  'adamw p f64 g f64 step 7 wd 0.1 unscale + clip',
  'adamw p f32 g bf16 step 7 beta1 0.3 clip inactive',
  'adamw_mixed p f16 g f16 step 7 wd 0.1 unscale + clip',
  'sgd p f16 g f16 nesterov unscale + clip',
  'sgd p bf16 g bf16 momentum dampening wd',
  'sgd p f64 g f64 first step',
  'adamw_mixed_hyper p bf16 g f32 step 7 wd 0.1 unscale + clip',
];
const selected = optimGroup
  .cases()
  .filter(
    (c) =>
      c.name.includes(' p f32 g f32 ') ||
      c.name.includes('adamw_mixed p bf16 g f32 ') ||
      (c.op === 'sumsq' && c.name.endsWith('[70001]')) ||
      (c.op === 'amp_update' && c.name.includes(' norm f32 ')) ||
      EXTRA.includes(c.name),
  );

void describe('optim CUDA kernels on the host emulator', { skip: unavailable ?? false }, () => {
  // sumsq's 4 dtypes; the f32 variants of adamw, adamw_hyper and sgd; adamw_mixed's bf16/f32 ones;
  // amp_update's 5 with an f32 norm.
  it('selects the cases it means to', () =>
    assert.equal(selected.length, 4 + 5 + 5 + 5 + 5 + 5 + EXTRA.length));
  for (const c of selected) {
    void it(c.name, () => {
      const def = optimGroup.defs.find((d) => d.name === c.op)!;
      const impl = optimGroup.impls.find((e) => e.op === c.op && e.backend === 'cuda')!
        .impl as CudaKernelImpl;
      const prepared = prepareCase(def, c, 3);
      const names = def.args.map((a) => a.name);
      const { outputs } = runNativeOnHost(
        asNative(impl),
        names.map((n) => prepared.descs[n]!),
        names.map((n) => {
          const init = prepared.initial[n]!;
          return new Uint8Array(init.buffer, init.byteOffset, init.byteLength);
        }),
        c.scalars,
      );
      const results: Record<string, HostArray> = {};
      names.forEach((n, i) => {
        const d = prepared.descs[n]!;
        const copy = Uint8Array.from(outputs[i]!);
        results[n] = hostView(d.dtype, copy.buffer, 0, numel(d.shape));
      });
      assert.deepEqual(checkCase(c, prepared, results), []);
    });
  }
});
