/**
 * A program that launches with more than 48 KiB of dynamic shared memory gets the opt-in attribute on
 * its function once, when it is loaded (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8); programs
 * within the default never call it. (Without the attribute the launch itself fails on the GPU.)
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CudaProgram } from '../../src/devices/cuda/kernel-api.js';
import { ProgramCache } from '../../src/devices/cuda/program-cache.js';
import type { Nvrtc } from '../../src/devices/cuda/ffi/nvrtc.js';
import { FakeGpu } from './fake-driver.js';

const program = (entry: string, maxDynamicSharedBytes?: number): CudaProgram => ({
  kind: 'program',
  source: `extern "C" __global__ void ${entry}() {}`,
  entry,
  grid: () => [1, 1, 1],
  block: () => [32, 1, 1],
  params: () => [],
  ...(maxDynamicSharedBytes === undefined ? {} : { maxDynamicSharedBytes }),
});

test('programs over 48 KiB of dynamic shared memory opt in once at load', () => {
  const gpu = new FakeGpu();
  const nvrtc = {
    version: 'fake',
    compile: () => ({ cubin: new Uint8Array(8), log: '', lowered: 'k' }),
  } as unknown as Nvrtc;
  const cache = new ProgramCache(gpu.driver(), nvrtc, 'sm_90', null);
  const big = program('big', 55_296);
  const fn = cache.function(big, [], {});
  assert.equal(cache.function(big, [], {}), fn, 'loaded once');
  cache.function(program('small'), [], {});
  cache.function(program('edge', 48 * 1024), [], {});
  assert.deepEqual(gpu.attributes, [[fn, 8, 55_296]]);
});
