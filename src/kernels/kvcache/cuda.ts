/**
 * CUDA versions of the KV-cache ops (NVRTC programs; X_t/X_c/ldX/stX from the prelude); kv_attention is
 * in cuda-attention.ts.
 *
 * kv_append, embedding_at, gather_rows: one thread per element (grid-stride), storage words copied
 * without conversion where source and destination share the dtype.
 */
import type { CudaProgram } from '../../devices/cuda/kernel-api.js';
import { BLOCK_DIM, GRID_STRIDE, count, elementwiseGrid } from '../common/cuda.js';
export { kvAttentionCuda } from './cuda-attention.js';

const NAN = '((X_c)__int_as_float(0x7fc00000))';

const APPEND_SOURCE = `extern "C" __global__ void tdm_kv_append(const X_t* __restrict__ qkv, const int* __restrict__ slot,
    const int* __restrict__ pos, X_t* __restrict__ kc, X_t* __restrict__ vc, long long n, int C, int S, int P) {
  ${GRID_STRIDE} {
    const long long m = i / C;
    const int c = (int)(i - m * C);
    const int sl = slot[m], p = pos[m];
    if (sl < 0 || sl >= S || p < 0 || p >= P) continue;
    const long long dst = ((long long)sl * P + p) * C + c;
    kc[dst] = qkv[m * 3 * C + C + c];
    vc[dst] = qkv[m * 3 * C + 2 * C + c];
  }
}`;

export const kvAppendCuda: CudaProgram = {
  kind: 'program',
  source: APPEND_SOURCE,
  entry: 'tdm_kv_append',
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  grid: (args) => elementwiseGrid(args[1]!.desc.shape[0]! * args[3]!.desc.shape[2]!),
  block: () => BLOCK_DIM,
  params: (args) => {
    const [S, P, C] = args[3]!.desc.shape as [number, number, number];
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      { kind: 'ptr', arg: 2 },
      { kind: 'ptr', arg: 3 },
      { kind: 'ptr', arg: 4 },
      { kind: 'i64', value: args[1]!.desc.shape[0]! * C },
      { kind: 'i32', value: C },
      { kind: 'i32', value: S },
      { kind: 'i32', value: P },
    ];
  },
};

const EMBED_SOURCE = `extern "C" __global__ void tdm_embedding_at(const int* __restrict__ ids, const int* __restrict__ pos,
    const X_t* __restrict__ wte, const X_t* __restrict__ wpe, X_t* __restrict__ y, long long n, int C, int V, int P) {
  ${GRID_STRIDE} {
    const long long m = i / C;
    const int c = (int)(i - m * C);
    const int id = ids[m], p = pos[m];
    const X_c v = (id >= 0 && id < V && p >= 0 && p < P)
        ? ldX(wte, (long long)id * C + c) + ldX(wpe, (long long)p * C + c) : ${NAN};
    stX(y, i, v);
  }
}`;

export const embeddingAtCuda: CudaProgram = {
  kind: 'program',
  source: EMBED_SOURCE,
  entry: 'tdm_embedding_at',
  dtypes: (args) => ({ X: args[2]!.desc.dtype }),
  grid: (args) => elementwiseGrid(count(args[4]!)),
  block: () => BLOCK_DIM,
  params: (args) => [
    { kind: 'ptr', arg: 0 },
    { kind: 'ptr', arg: 1 },
    { kind: 'ptr', arg: 2 },
    { kind: 'ptr', arg: 3 },
    { kind: 'ptr', arg: 4 },
    { kind: 'i64', value: count(args[4]!) },
    { kind: 'i32', value: args[2]!.desc.shape[1]! },
    { kind: 'i32', value: args[2]!.desc.shape[0]! },
    { kind: 'i32', value: args[3]!.desc.shape[0]! },
  ],
};

const GATHER_SOURCE = `extern "C" __global__ void tdm_gather_rows(const X_t* __restrict__ x, const int* __restrict__ index,
    X_t* __restrict__ y, long long n, int C, int M) {
  ${GRID_STRIDE} {
    const long long r = i / C;
    const int c = (int)(i - r * C);
    const int row = index[r];
    if (row >= 0 && row < M) y[i] = x[(long long)row * C + c];
    else stX(y, i, ${NAN});
  }
}`;

export const gatherRowsCuda: CudaProgram = {
  kind: 'program',
  source: GATHER_SOURCE,
  entry: 'tdm_gather_rows',
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  grid: (args) => elementwiseGrid(count(args[2]!)),
  block: () => BLOCK_DIM,
  params: (args) => [
    { kind: 'ptr', arg: 0 },
    { kind: 'ptr', arg: 1 },
    { kind: 'ptr', arg: 2 },
    { kind: 'i64', value: count(args[2]!) },
    { kind: 'i32', value: args[0]!.desc.shape[1]! },
    { kind: 'i32', value: args[0]!.desc.shape[0]! },
  ],
};
