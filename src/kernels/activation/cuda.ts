/** activation on CUDA: one grid-stride kernel, the activation chosen at compile time (ACT). */
import type { CudaProgram } from '../../devices/cuda/kernel-api.js';
import { BLOCK_DIM, GRID_STRIDE, count, elementwiseGrid } from '../common/cuda.js';
import { enumScalar } from '../common/scalars.js';
import { ACT_SOURCE, actIndex } from './cuda-source.js';
import { ACT_OPS } from './ops.js';

/** y = act(x); y may be x (linear_act's fallback applies it to pre in another tensor, never in place). */
export const activationCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_activation',
  source: `${ACT_SOURCE}
extern "C" __global__ void tdm_activation(const X_t* __restrict__ x, X_t* __restrict__ y, long long n) {
  ${GRID_STRIDE} stX(y, i, tdm_act(ldX(x, i)));
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  defines: (_args, scalars) => ({ ACT: actIndex(enumScalar('activation', scalars, 'op', ACT_OPS)) }),
  grid: (args) => elementwiseGrid(count(args[0]!)),
  block: () => BLOCK_DIM,
  params: (args) => [
    { kind: 'ptr', arg: 0 },
    { kind: 'ptr', arg: 1 },
    { kind: 'i64', value: count(args[0]!) },
  ],
};
