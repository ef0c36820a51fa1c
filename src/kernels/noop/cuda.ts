/** noop on CUDA: an empty kernel, so overhead tests measure a real launch and completion. */
import type { CudaProgram } from '../../devices/cuda/kernel-api.js';

export const noopCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_noop',
  source: 'extern "C" __global__ void tdm_noop() {}',
  prelude: false,
  grid: () => [1, 1, 1],
  block: () => [1, 1, 1],
  params: () => [],
};
