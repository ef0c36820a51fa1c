/**
 * image_normalize's CUDA program executed on the host emulator (cuda-emu/: the real program text,
 * prelude, defines, launch geometry and parameters, one host thread per CUDA thread) against the float64
 * reference, through its conformance cases: each output dtype, both channel orders, and the shape whose
 * pixels span several blocks. The GPU itself runs every case in test/gpu/cuda-conformance.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type HostArray, hostView } from '../../src/core/dtype.js';
import { numel } from '../../src/core/shape.js';
import type { CudaKernelImpl, CudaNative } from '../../src/devices/cuda/kernel-api.js';
import { checkCase, prepareCase } from '../../src/kernels/conformance.js';
import { imageNormalizeGroup } from '../../src/kernels/onnx/image-group.js';
import { hostCudaUnavailable, runNativeOnHost } from './cuda-emu/host-cuda.js';

const unavailable = hostCudaUnavailable();
if (unavailable) console.log(`# skip image_normalize CUDA emulation: ${unavailable}`);

const PICKED = [
  'image_normalize f32 paddle rgb [3,40,96,3]',
  'image_normalize f32 paddle bgr [2,3,33,3]',
  'image_normalize f64 caffe bgr [1,5,7,3]',
  'image_normalize f16 paddle rgb [2,3,33,3]',
  'image_normalize bf16 caffe bgr [2,3,33,3]',
];
const all = imageNormalizeGroup.cases();
const cases = PICKED.map((name) => all.find((c) => c.name === name));

void describe('image_normalize on the CUDA host emulator', { skip: unavailable ?? false }, () => {
  void it('finds every picked case', () =>
    assert.deepEqual(
      cases.map((c) => c?.name),
      PICKED,
    ));
  const def = imageNormalizeGroup.defs[0]!;
  const impl = imageNormalizeGroup.impls.find((e) => e.backend === 'cuda')!.impl as CudaKernelImpl;
  const native: CudaNative =
    impl.kind === 'native' ? impl : { kind: 'native', run: (ctx, args, s) => ctx.launch(impl, args, s) };
  for (const c of cases)
    if (c)
      void it(c.name, () => {
        const prepared = prepareCase(def, c);
        def.validate(prepared.descs, c.scalars);
        const descs = def.args.map((s) => prepared.descs[s.name]!);
        const initial = def.args.map((s) => {
          const a = prepared.initial[s.name]!;
          return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
        });
        const { outputs } = runNativeOnHost(native, descs, initial, c.scalars);
        const results: Record<string, HostArray> = {};
        def.args.forEach((s, i) => {
          const d = descs[i]!;
          const copy = Uint8Array.from(outputs[i]!);
          results[s.name] = hostView(d.dtype, copy.buffer, 0, numel(d.shape));
        });
        assert.deepEqual(checkCase(c, prepared, results), []);
      });
});
