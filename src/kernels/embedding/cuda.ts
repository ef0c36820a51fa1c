/**
 * embedding on CUDA: one thread per output element (grid-stride), y = wte[id] + wpe[t] in X_c with one
 * rounding. Consecutive threads read consecutive columns of one table row, so loads and stores
 * coalesce; an id outside [0, V) gives NaN without reading wte.
 */
import type { CudaProgram } from '../../devices/cuda/kernel-api.js';
import { BLOCK_DIM, GRID_STRIDE, count, elementwiseGrid } from '../common/cuda.js';

const SOURCE = `extern "C" __global__ void tdm_embedding(const int* __restrict__ ids, const X_t* __restrict__ wte,
    const X_t* __restrict__ wpe, X_t* __restrict__ y, long long n, int C, int T, int V) {
  ${GRID_STRIDE} {
    const long long row = i / C;
    const int c = (int)(i - row * C);
    const int id = ids[row];
    const int t = (int)(row % T);
    const X_c v = (id >= 0 && id < V)
        ? ldX(wte, (long long)id * C + c) + ldX(wpe, (long long)t * C + c)
        : (X_c)__int_as_float(0x7fc00000);
    stX(y, i, v);
  }
}`;

export const embeddingCuda: CudaProgram = {
  kind: 'program',
  source: SOURCE,
  entry: 'tdm_embedding',
  dtypes: (args) => ({ X: args[1]!.desc.dtype }),
  grid: (args) => elementwiseGrid(count(args[3]!)),
  block: () => BLOCK_DIM,
  params: (args) => [
    { kind: 'ptr', arg: 0 },
    { kind: 'ptr', arg: 1 },
    { kind: 'ptr', arg: 2 },
    { kind: 'ptr', arg: 3 },
    { kind: 'i64', value: count(args[3]!) },
    { kind: 'i32', value: args[1]!.desc.shape[1]! },
    { kind: 'i32', value: args[0]!.desc.shape[1]! },
    { kind: 'i32', value: args[1]!.desc.shape[0]! },
  ],
};
