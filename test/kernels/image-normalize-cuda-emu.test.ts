/**
 * image_normalize's CUDA program executed on the host emulator (cuda-emu/: the real program text,
 * prelude, defines, launch geometry and parameters, one host thread per CUDA thread) against the float64
 * reference, through its conformance cases: each output dtype, both channel orders, and the shape whose
 * pixels span several blocks. The GPU itself runs every case in test/gpu/cuda-conformance.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CudaKernelImpl } from '../../src/devices/cuda/kernel-api.js';
import { imageNormalizeGroup } from '../../src/kernels/onnx/image-group.js';
import { hostCudaUnavailable } from './cuda-emu/host-cuda.js';
import { runCaseOnEmulator } from './cuda-emu/run-case.js';

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
  for (const c of cases)
    if (c) void it(c.name, () => assert.deepEqual(runCaseOnEmulator(c, { def, impl }), []));
});
