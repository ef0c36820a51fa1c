/**
 * kv_attention on CUDA: each query row attends to its own sequence's cached keys up to its position.
 * One block of 128 threads per (row, head); the scores of the row's whole prefix sit in shared memory
 * (P ≤ a few thousand positions), then a block max and sum, then the weighted sum of the values. Decode
 * (one row per sequence) and prefill (many rows of one sequence) are the same launch: every row only
 * needs its slot and position. Memory-bound like every decode kernel: the prefix is read once per head.
 *
 * Two texts. The vector one (f16/bf16, head dim 8·g with g a power of two ≤ 32, caches 16-byte
 * aligned): a key's row is read by g lanes with one 16-byte load each, 32/g keys per warp at once and
 * four such passes in flight per loop trip, the score summed over the g lanes by shuffles; the values the
 * same way, each thread holding 8 columns of one key group, the groups added in shared memory. The
 * scalar one (every other case): lanes split the head dim with 2-byte loads, one key per warp at a time
 * and a 5-step shuffle per key — at decode over 256 sequences its latency-bound loop was what a GPT-2
 * decode step waited on.
 */
import { TandemError } from '../../core/errors.js';
import type { CudaArg, CudaNative, CudaParam, CudaProgram } from '../../devices/cuda/kernel-api.js';
import type { Scalars } from '../../devices/device.js';
import { MATH_OVERLOADS } from '../common/cuda.js';
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

/** Both texts' first six parameters: qkv, slot, pos, kcache, vcache, y. */
const POINTERS: readonly CudaParam[] = [0, 1, 2, 3, 4, 5].map((arg) => ({ kind: 'ptr', arg }));

/** Shared memory of one block: q (d), the prefix's scores (P) and the reduction row (128), in X_c. */
function attentionShared(headDim: number, positions: number, f64: boolean): number {
  return (headDim + positions + THREADS) * (f64 ? 8 : 4);
}

/** The most a block may ask for without opting in to more (every GPU since Kepler has 48 KiB). */
const MAX_SHARED = 48 * 1024;

const scalarProgram: CudaProgram = {
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
      ...POINTERS,
      { kind: 'i32', value: C },
      { kind: 'i32', value: heads },
      { kind: 'i32', value: headDim },
      { kind: 'i32', value: S },
      { kind: 'i32', value: P },
      { kind: 'f64', value: scale },
    ];
  },
};

/** Keys (and value rows) each thread has in flight per loop trip in the vector text. */
const UNROLL = 4;

const VECTOR_SOURCE = `${MATH_OVERLOADS}
static __device__ __forceinline__ float kv_block_max(float v, float* red) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = m_max(v, __shfl_xor_sync(0xffffffffu, v, o));
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  v = red[0];
  for (int w = 1; w < (int)(blockDim.x >> 5); w++) v = m_max(v, red[w]);
  __syncthreads();
  return v;
}
static __device__ __forceinline__ float kv_block_sum(float v, float* red) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  v = 0.f;
  for (int w = 0; w < (int)(blockDim.x >> 5); w++) v += red[w];
  __syncthreads();
  return v;
}
// KV_G lanes per key (8 columns each), KV_D = 8 * KV_G the head dim, KV_U passes in flight.
extern "C" __global__ void tdm_kv_attention_v8(const X_t* __restrict__ qkv, const int* __restrict__ slot,
    const int* __restrict__ pos, const X_t* __restrict__ kc, const X_t* __restrict__ vc, X_t* __restrict__ y,
    int C, int H, int S, int P, double scaleD) {
  extern __shared__ double kvSmem[];
  float* p = reinterpret_cast<float*>(kvSmem);
  float* red = p + P;  // 8 * blockDim floats: the value groups' partial rows (and the reductions' words)
  const int m = blockIdx.x / H, h = blockIdx.x - (blockIdx.x / H) * H;
  const int tid = threadIdx.x, nt = blockDim.x;
  const long long out = (long long)m * C + (long long)h * KV_D;
  const int sl = slot[m], last = pos[m];
  if (sl < 0 || sl >= S || last < 0 || last >= P) {
    for (int c = tid; c < KV_D; c += nt) stX(y, out + c, ${NAN});
    return;
  }
  const float scale = (float)scaleD;
  const int lane = tid & 31, warp = tid >> 5, warps = nt >> 5;
  const int sub = lane % KV_G, kw = lane / KV_G;
  const int keysPerWarp = 32 / KV_G, stride = warps * keysPerWarp;
  float qr[8];
#pragma unroll
  for (int j = 0; j < 8; j++) qr[j] = ldX(qkv, (long long)m * 3 * C + (long long)h * KV_D + sub * 8 + j);
  const long long head = (long long)sl * P * C + (long long)h * KV_D;
  // Scores: the loop bound is the warp's first key, the same for all its lanes (the shuffles need all 32).
  for (int s0 = warp * keysPerWarp; s0 <= last; s0 += KV_U * stride) {
    uint4 raw[KV_U];
#pragma unroll
    for (int u = 0; u < KV_U; u++) {
      const int s = s0 + u * stride + kw;
      raw[u] = s <= last ? *reinterpret_cast<const uint4*>(kc + head + (long long)s * C + sub * 8)
                         : make_uint4(0u, 0u, 0u, 0u);
    }
#pragma unroll
    for (int u = 0; u < KV_U; u++) {
      const X_t* k8 = reinterpret_cast<const X_t*>(&raw[u]);
      float dot = 0.f;
#pragma unroll
      for (int j = 0; j < 8; j++) dot += qr[j] * ldX(k8, j);
#pragma unroll
      for (int o = KV_G >> 1; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
      const int s = s0 + u * stride + kw;
      if (sub == 0 && s <= last) p[s] = dot * scale;
    }
  }
  __syncthreads();
  float mx = -__int_as_float(0x7f800000);
  for (int s = tid; s <= last; s += nt) mx = m_max(mx, p[s]);
  mx = kv_block_max(mx, red);
  float sum = 0.f;
  for (int s = tid; s <= last; s += nt) {
    const float e = m_exp(p[s] - mx);
    p[s] = e;
    sum += e;
  }
  sum = kv_block_sum(sum, red);  // its barriers also publish the p[s] written above
  // Values: thread t holds columns (t mod g)·8 … +7 (= sub: g divides 32) of the keys s ≡ ⌊t/g⌋ (mod nt/g).
  const int group = tid / KV_G, groups = nt / KV_G;
  float acc[8];
#pragma unroll
  for (int j = 0; j < 8; j++) acc[j] = 0.f;
  for (int s0 = group; s0 <= last; s0 += KV_U * groups) {
    uint4 raw[KV_U];
    float w[KV_U];
#pragma unroll
    for (int u = 0; u < KV_U; u++) {
      const int s = s0 + u * groups;
      const bool in = s <= last;
      raw[u] = in ? *reinterpret_cast<const uint4*>(vc + head + (long long)s * C + sub * 8)
                  : make_uint4(0u, 0u, 0u, 0u);
      w[u] = in ? p[s] : 0.f;
    }
#pragma unroll
    for (int u = 0; u < KV_U; u++) {
      const X_t* v8 = reinterpret_cast<const X_t*>(&raw[u]);
#pragma unroll
      for (int j = 0; j < 8; j++) acc[j] += w[u] * ldX(v8, j);
    }
  }
#pragma unroll
  for (int j = 0; j < 8; j++) red[group * KV_D + sub * 8 + j] = acc[j];
  __syncthreads();
  for (int c = tid; c < KV_D; c += nt) {
    float t = 0.f;
    for (int g = 0; g < groups; g++) t += red[g * KV_D + c];
    stX(y, out + c, t / sum);
  }
}`;

/** Lanes per key of the vector text for this head dim, or 0 when it does not apply. */
function vectorLanes(headDim: number): number {
  const g = headDim / 8;
  return Number.isInteger(g) && g >= 1 && g <= 32 && (g & (g - 1)) === 0 ? g : 0;
}

function vectorShared(positions: number): number {
  return (positions + 8 * THREADS) * 4;
}

const vectorProgram: CudaProgram = {
  kind: 'program',
  source: VECTOR_SOURCE,
  entry: 'tdm_kv_attention_v8',
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  defines: (args, scalars) => {
    const { headDim } = kvHeads('kv_attention', args[3]!.desc.shape[2]!, scalars);
    return { KV_G: vectorLanes(headDim), KV_D: headDim, KV_U: UNROLL };
  },
  grid: (args, scalars) => scalarProgram.grid(args, scalars),
  block: () => [THREADS, 1, 1],
  sharedBytes: (args) => vectorShared(args[3]!.desc.shape[1]!),
  params: (args, scalars) => {
    const [S, P, C] = args[3]!.desc.shape as [number, number, number];
    const { heads, scale } = kvHeads('kv_attention', C, scalars);
    return [
      ...POINTERS,
      { kind: 'i32', value: C },
      { kind: 'i32', value: heads },
      { kind: 'i32', value: S },
      { kind: 'i32', value: P },
      { kind: 'f64', value: scale },
    ];
  },
};

/** TANDEM_KV_ATTN_TEXT=scalar keeps every launch on the scalar text (an A/B knob for bench/kv-attention.ts). */
const SCALAR_ONLY = process.env['TANDEM_KV_ATTN_TEXT'] === 'scalar';

/** Whether the vector text applies: 16-bit storage, its head dims, 16-byte aligned caches, shared memory. */
export function kvAttentionVectorized(args: readonly CudaArg[], scalars: Scalars): boolean {
  const dtype = args[0]!.desc.dtype;
  if (SCALAR_ONLY || (dtype !== 'f16' && dtype !== 'bf16')) return false;
  const [, P, C] = args[3]!.desc.shape as [number, number, number];
  const { headDim } = kvHeads('kv_attention', C, scalars);
  return (
    vectorLanes(headDim) > 0 &&
    args[3]!.ptr % 16 === 0 &&
    args[4]!.ptr % 16 === 0 &&
    vectorShared(P) <= MAX_SHARED
  );
}

export const kvAttentionCuda: CudaNative = {
  kind: 'native',
  run(ctx, args, scalars) {
    ctx.launch(kvAttentionVectorized(args, scalars) ? vectorProgram : scalarProgram, args, scalars);
  },
};
