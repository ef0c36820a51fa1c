/**
 * CUDA versions of the KV-cache ops (NVRTC programs; X_t/X_c/ldX/stX from the prelude).
 *
 * kv_attention: one block of 128 threads per (row, head). Each warp takes keys s = warp, warp + 4, …
 * (its lanes split the head dim, a shuffle sum gives the score), the scores of the row's whole prefix sit
 * in shared memory (P ≤ a few thousand positions), then a block max and sum, and the output: thread t
 * sums value column t mod d over the keys of group ⌊t/d⌋, the groups are added in shared memory. Decode
 * (one row per sequence) and prefill (many rows of one sequence) are the same launch: every row only
 * needs its slot and position. Memory-bound like every decode kernel; the prefix is read once per head.
 *
 * kv_append, embedding_at, gather_rows: one thread per element (grid-stride), storage words copied
 * without conversion where source and destination share the dtype.
 */
import { TandemError } from '../../core/errors.js';
import type { CudaProgram } from '../../devices/cuda/kernel-api.js';
import { BLOCK_DIM, GRID_STRIDE, MATH_OVERLOADS, count, elementwiseGrid } from '../common/cuda.js';
import { kvHeads } from './params.js';

const NAN = '((X_c)__int_as_float(0x7fc00000))';
const THREADS = 128;

const ATTENTION_SOURCE = `${MATH_OVERLOADS}
extern "C" __global__ void tdm_kv_attention(const X_t* __restrict__ qkv, const int* __restrict__ slot,
    const int* __restrict__ pos, const X_t* __restrict__ kc, const X_t* __restrict__ vc, X_t* __restrict__ y,
    int C, int H, int D, int S, int P, double scaleD) {
  extern __shared__ double kvSmem[];
  X_c* q = reinterpret_cast<X_c*>(kvSmem);
  X_c* p = q + D;
  X_c* red = p + P;
  const int m = blockIdx.x / H, h = blockIdx.x - (blockIdx.x / H) * H;
  const int tid = threadIdx.x, nt = blockDim.x;
  const long long out = (long long)m * C + (long long)h * D;
  const int sl = slot[m], last = pos[m];
  if (sl < 0 || sl >= S || last < 0 || last >= P) {
    for (int c = tid; c < D; c += nt) stX(y, out + c, ${NAN});
    return;
  }
  const X_c scale = (X_c)scaleD;
  for (int c = tid; c < D; c += nt) q[c] = ldX(qkv, (long long)m * 3 * C + (long long)h * D + c);
  __syncthreads();
  const long long base = (long long)sl * P * C + (long long)h * D;
  const int warp = tid >> 5, lane = tid & 31, warps = nt >> 5;
  for (int s = warp; s <= last; s += warps) {
    X_c dot = 0;
    for (int c = lane; c < D; c += 32) dot += q[c] * ldX(kc, base + (long long)s * C + c);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
    if (lane == 0) p[s] = dot * scale;
  }
  __syncthreads();
  X_c mx = -(X_c)__int_as_float(0x7f800000);
  for (int s = tid; s <= last; s += nt) mx = m_max(mx, p[s]);
  red[tid] = mx;
  __syncthreads();
  for (int o = nt >> 1; o > 0; o >>= 1) {
    if (tid < o) red[tid] = m_max(red[tid], red[tid + o]);
    __syncthreads();
  }
  mx = red[0];
  __syncthreads();
  X_c sum = 0;
  for (int s = tid; s <= last; s += nt) {
    const X_c e = m_exp(p[s] - mx);
    p[s] = e;
    sum += e;
  }
  red[tid] = sum;
  __syncthreads();
  for (int o = nt >> 1; o > 0; o >>= 1) {
    if (tid < o) red[tid] += red[tid + o];
    __syncthreads();
  }
  sum = red[0];
  __syncthreads();
  if (D <= nt) {
    const int groups = nt / D, c = tid % D, g = tid / D;
    X_c acc = 0;
    if (g < groups)
      for (int s = g; s <= last; s += groups) acc += p[s] * ldX(vc, base + (long long)s * C + c);
    red[tid] = acc;
    __syncthreads();
    if (tid < D) {
      X_c t = 0;
      for (int k = 0; k < groups; k++) t += red[k * D + tid];
      stX(y, out + tid, t / sum);
    }
  } else {
    for (int c = tid; c < D; c += nt) {
      X_c acc = 0;
      for (int s = 0; s <= last; s++) acc += p[s] * ldX(vc, base + (long long)s * C + c);
      stX(y, out + c, acc / sum);
    }
  }
}`;

/** Shared memory of one block: q (d), the prefix's scores (P) and the reduction row (128), in X_c. */
function attentionShared(headDim: number, positions: number, f64: boolean): number {
  return (headDim + positions + THREADS) * (f64 ? 8 : 4);
}

/** The most a block may ask for without opting in to more (every GPU since Kepler has 48 KiB). */
const MAX_SHARED = 48 * 1024;

export const kvAttentionCuda: CudaProgram = {
  kind: 'program',
  source: ATTENTION_SOURCE,
  entry: 'tdm_kv_attention',
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  grid: (args, scalars) => {
    const C = args[3]!.desc.shape[2]!;
    const { heads } = kvHeads('kv_attention', C, scalars);
    return [args[1]!.desc.shape[0]! * heads, 1, 1];
  },
  block: () => [THREADS, 1, 1],
  sharedBytes: (args, scalars) => {
    const [, P, C] = args[3]!.desc.shape as [number, number, number];
    const { headDim } = kvHeads('kv_attention', C, scalars);
    const bytes = attentionShared(headDim, P, args[0]!.desc.dtype === 'f64');
    if (bytes > MAX_SHARED)
      throw new TandemError(
        'TANDEM_ERR_SHAPE',
        `kv_attention: a cache of ${P} positions needs ${bytes} B of shared memory per block (CUDA limit ${MAX_SHARED})`,
        { op: 'kv_attention', positions: P },
      );
    return bytes;
  },
  params: (args, scalars) => {
    const [S, P, C] = args[3]!.desc.shape as [number, number, number];
    const { heads, headDim, scale } = kvHeads('kv_attention', C, scalars);
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      { kind: 'ptr', arg: 2 },
      { kind: 'ptr', arg: 3 },
      { kind: 'ptr', arg: 4 },
      { kind: 'ptr', arg: 5 },
      { kind: 'i32', value: C },
      { kind: 'i32', value: heads },
      { kind: 'i32', value: headDim },
      { kind: 'i32', value: S },
      { kind: 'i32', value: P },
      { kind: 'f64', value: scale },
    ];
  },
};

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
