/** axpy on CUDA: y = alpha * x + y, computed in f32 (f64 for f64 tensors). */
import type { CudaProgram } from '../../devices/cuda/kernel-api.js';
import { BLOCK_DIM, GRID_STRIDE, count, elementwiseGrid } from '../common/cuda.js';
import { numberScalar } from '../common/scalars.js';

export const axpyCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_axpy',
  source: `extern "C" __global__ void tdm_axpy(const X_t* __restrict__ x, X_t* __restrict__ y, double alpha, long long n) {
  const X_c a = (X_c)alpha;
  ${GRID_STRIDE} stX(y, i, a * ldX(x, i) + ldX(y, i));
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  grid: (args) => elementwiseGrid(count(args[0]!)),
  block: () => BLOCK_DIM,
  params: (args, scalars) => [
    { kind: 'ptr', arg: 0 },
    { kind: 'ptr', arg: 1 },
    { kind: 'f64', value: numberScalar('axpy', scalars, 'alpha', 1) },
    { kind: 'i64', value: count(args[0]!) },
  ],
};
