/**
 * The norm group's CUDA paths that the small conformance cases do not reach: GPT-2 sizes (C = 768 with
 * 16-byte vectors and several vectors per lane, a 50304-wide padded vocabulary with 1024-thread blocks),
 * many blocks of column partials in layernorm_backward, heavily repeated ids in embedding_backward
 * (atomics, the f32 scratch table for bf16), and a long dropout stream whose mask must match the CPU's
 * bit for bit. Each case runs through the float64 reference like a conformance case.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NN_NORM_GPU_CASES } from '../kernels/nn-norm-gpu-cases.js';
import { cudaDevice, runCudaCase } from './cuda-harness.js';

const { device, reason } = await cudaDevice();
if (!device) console.log(`# skip nn-norm cuda: ${reason}`);

void describe('nn-norm on CUDA at model sizes', { skip: device ? false : reason }, () => {
  for (const c of NN_NORM_GPU_CASES) {
    void it(c.name, async () => {
      assert.deepEqual(await runCudaCase(device!, c), []);
    });
  }
});
