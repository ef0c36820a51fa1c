/** scale on CUDA: x = alpha * x in place. */
import type { CudaProgram } from '../../devices/cuda/kernel-api.js';
import { BLOCK_DIM, GRID_STRIDE, count, elementwiseGrid } from '../common/cuda.js';
import { numberScalar } from '../common/scalars.js';

export const scaleCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_scale',
  source: `extern "C" __global__ void tdm_scale(X_t* __restrict__ x, double alpha, long long n) {
  const X_c a = (X_c)alpha;
  ${GRID_STRIDE} stX(x, i, a * ldX(x, i));
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  grid: (args) => elementwiseGrid(count(args[0]!)),
  block: () => BLOCK_DIM,
  params: (args, scalars) => [
    { kind: 'ptr', arg: 0 },
    { kind: 'f64', value: numberScalar('scale', scalars, 'alpha') },
    { kind: 'i64', value: count(args[0]!) },
  ],
};
