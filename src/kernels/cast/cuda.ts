/** cast on CUDA: load as X's compute type, store converting to Y (saturating for integers). */
import type { CudaProgram } from '../../devices/cuda/kernel-api.js';
import { BLOCK_DIM, GRID_STRIDE, count, elementwiseGrid } from '../common/cuda.js';

export const castCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_cast',
  source: `extern "C" __global__ void tdm_cast(const X_t* __restrict__ x, Y_t* __restrict__ y, long long n) {
  ${GRID_STRIDE} stY(y, i, ldX(x, i));
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype, Y: args[1]!.desc.dtype }),
  grid: (args) => elementwiseGrid(count(args[0]!)),
  block: () => BLOCK_DIM,
  params: (args) => [
    { kind: 'ptr', arg: 0 },
    { kind: 'ptr', arg: 1 },
    { kind: 'i64', value: count(args[0]!) },
  ],
};
