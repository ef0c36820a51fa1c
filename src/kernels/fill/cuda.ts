/** fill on CUDA: y = value (any dtype; the value is converted once per element by the store). */
import type { CudaProgram } from '../../devices/cuda/kernel-api.js';
import { BLOCK_DIM, GRID_STRIDE, count, elementwiseGrid } from '../common/cuda.js';
import { fillValue } from './def.js';

export const fillCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_fill',
  source: `extern "C" __global__ void tdm_fill(Y_t* __restrict__ y, double value, long long n) {
  ${GRID_STRIDE} stY(y, i, value);
}`,
  dtypes: (args) => ({ Y: args[0]!.desc.dtype }),
  grid: (args) => elementwiseGrid(count(args[0]!)),
  block: () => BLOCK_DIM,
  params: (args, scalars) => [
    { kind: 'ptr', arg: 0 },
    { kind: 'f64', value: fillValue(scalars, args[0]!.desc.dtype) },
    { kind: 'i64', value: count(args[0]!) },
  ],
};
