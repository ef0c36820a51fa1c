/** Every conformance case on the CUDA backend (the same cases the CPU kernels pass). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CONFORMANCE_CASES } from '../../src/kernels/conformance-cases.js';
import { cudaDevice, runCudaCase } from './cuda-harness.js';

const { device, reason } = await cudaDevice();
if (!device) console.log(`# skip cuda conformance: ${reason}`);

void describe('cuda conformance', { skip: device ? false : reason }, () => {
  for (const c of CONFORMANCE_CASES) {
    void it(c.name, async () => {
      assert.deepEqual(await runCudaCase(device!, c), []);
    });
  }
});
