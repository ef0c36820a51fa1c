/**
 * Flash-style causal attention on CUDA cores, for every float dtype and head dims up to 128: the
 * scores never leave the chip. A warp owns ROWS rows (query rows forward and for dq, key rows for
 * dk/dv); its lanes take LANES keys (queries) of the tile in shared memory at once, one dot product
 * per lane, so softmax statistics are warp reductions and the products with v (dy, k, q) broadcast
 * one lane's weight at a time. f16/bf16 compute in f32, f64 in f64 (smaller tiles: 48 KiB of shared
 * memory). The tensor-core path for f16/bf16 is in cuda-mma.ts; this one is the reference on the GPU.
 *
 * The head dim HD is a run-time parameter (shared tiles sized for 128), so one compiled program serves
 * every head dim of a dtype. Defines: F64 (1 for f64). Bound types: X (storage), L (lse: f32 or f64).
 */
import { MATH_OVERLOADS } from '../common/cuda.js';

const COMMON = `${MATH_OVERLOADS}
#if F64
#define LANES 16
#define ROWS 1
#else
#define LANES 32
#define ROWS 2
#endif
#define WARPS 4
#define BR (WARPS * ROWS)
#define HDM 128
#define NJ (HDM / 32)
#define KS (HD + 1)
#define KSM (HDM + 1)
#define FULL 0xffffffffu
#define NEG_INF (-(X_c)__int_as_float(0x7f800000))
static __device__ __forceinline__ X_c warp_max(X_c v) {
  for (int o = 16; o > 0; o >>= 1) v = m_max(v, __shfl_xor_sync(FULL, v, o));
  return v;
}
static __device__ __forceinline__ X_c warp_sum(X_c v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL, v, o);
  return v;
}
// Rows [r0, r0 + n) of one head's part (0 q, 1 k, 2 v) of qkv into s[n][stride]; rows past T are 0.
static __device__ __forceinline__ void load_part(X_c* s, int stride, const X_t* __restrict__ qkv, int b, int h, int part,
    int r0, int n, int T, int H, X_c mul, int HD) {
  const long long ld = 3LL * H * HD;
  for (int e = threadIdx.x; e < n * HD; e += blockDim.x) {
    const int r = e / HD, i = e - r * HD, t = r0 + r;
    s[r * stride + i] = t < T ? ldX(qkv, ((long long)b * T + t) * ld + (long long)part * H * HD + (long long)h * HD + i) * mul : (X_c)0;
  }
}
// The same from a [B, T, C] tensor (y, dy).
static __device__ __forceinline__ void load_rows(X_c* s, int stride, const X_t* __restrict__ x, int b, int h, int r0, int n, int T, int H, int HD) {
  for (int e = threadIdx.x; e < n * HD; e += blockDim.x) {
    const int r = e / HD, i = e - r * HD, t = r0 + r;
    s[r * stride + i] = t < T ? ldX(x, ((long long)b * T + t) * H * HD + (long long)h * HD + i) : (X_c)0;
  }
}
`;

/** Forward: grid (B·H, ceil(T / BR)), 128 threads. Heaviest query tiles first (the causal triangle). */
export const GENERIC_FORWARD = `${COMMON}
extern "C" __global__ void __launch_bounds__(128) tdm_attn_fwd(const X_t* __restrict__ qkv, X_t* __restrict__ y,
    L_t* __restrict__ lse, int T, int H, int HD, double scale_in) {
  __shared__ X_c sq[BR * KSM];
  __shared__ X_c sk[LANES * KSM];
  __shared__ X_c sv[LANES * HDM];
  const int bh = blockIdx.x, b = bh / H, h = bh - b * H;
  const int q0 = (gridDim.y - 1 - blockIdx.y) * BR;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  load_part(sq, KS, qkv, b, h, 0, q0, BR, T, H, (X_c)scale_in, HD);
  X_c m[ROWS], l[ROWS], acc[ROWS][NJ];
#pragma unroll
  for (int rr = 0; rr < ROWS; rr++) {
    m[rr] = NEG_INF; l[rr] = 0;
#pragma unroll
    for (int j = 0; j < NJ; j++) acc[rr][j] = 0;
  }
  const int qlast = min(q0 + BR, T) - 1;
  for (int k0 = 0; k0 <= qlast; k0 += LANES) {
    __syncthreads();
    load_part(sk, KS, qkv, b, h, 1, k0, LANES, T, H, (X_c)1, HD);
    load_part(sv, HD, qkv, b, h, 2, k0, LANES, T, H, (X_c)1, HD);
    __syncthreads();
#pragma unroll
    for (int rr = 0; rr < ROWS; rr++) {
      const int r = warp * ROWS + rr, t = q0 + r;
      if (t >= T || k0 > t) continue;
      const int s = k0 + lane;
      const bool live = lane < LANES && s <= t;
      X_c sc = NEG_INF;
      if (live) {
        X_c dot = 0;
        for (int i = 0; i < HD; i++) dot += sq[r * KS + i] * sk[lane * KS + i];
        sc = dot;
      }
      const X_c mnew = m_max(m[rr], warp_max(sc));
      const X_c p = live ? m_exp(sc - mnew) : (X_c)0;
      const X_c corr = m_exp(m[rr] - mnew);
      l[rr] = l[rr] * corr + warp_sum(p);
      m[rr] = mnew;
#pragma unroll
      for (int j = 0; j < NJ; j++) acc[rr][j] *= corr;
      const int n = min(LANES, t - k0 + 1);
      for (int u = 0; u < n; u++) {
        const X_c pu = __shfl_sync(FULL, p, u);
#pragma unroll
        for (int j = 0; j < NJ; j++) {
          const int i = lane + 32 * j;
          if (i < HD) acc[rr][j] += pu * sv[u * HD + i];
        }
      }
    }
  }
#pragma unroll
  for (int rr = 0; rr < ROWS; rr++) {
    const int t = q0 + warp * ROWS + rr;
    if (t >= T) continue;
    const X_c inv = (X_c)1 / l[rr];
#pragma unroll
    for (int j = 0; j < NJ; j++) {
      const int i = lane + 32 * j;
      if (i < HD) stX(y, ((long long)b * T + t) * H * HD + (long long)h * HD + i, acc[rr][j] * inv);
    }
    if (lane == 0) stL(lse, (long long)bh * T + t, m[rr] + m_log(l[rr]));
  }
}
`;

/** delta[b,h,t] = Σ dy ⊙ y over the head's d columns: a warp per row, grid-stride over B·T·H rows. */
export const DELTA = `${COMMON}
extern "C" __global__ void tdm_attn_delta(const X_t* __restrict__ dy, const X_t* __restrict__ y, X_c* __restrict__ delta,
    int B, int T, int H, int HD) {
  const int lane = threadIdx.x & 31;
  const long long rows = (long long)B * T * H;
  for (long long w = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5; w < rows; w += ((long long)gridDim.x * blockDim.x) >> 5) {
    const long long bt = w / H;
    const int h = (int)(w - bt * H);
    const long long base = bt * H * HD + (long long)h * HD;
    X_c acc = 0;
    for (int i = lane; i < HD; i += 32) acc += ldX(dy, base + i) * ldX(y, base + i);
    acc = warp_sum(acc);
    const long long b = bt / T, t = bt - b * T;
    if (lane == 0) delta[(b * H + h) * T + t] = acc;
  }
}
`;

/**
 * dk, dv for the block's BR key rows, over every query tile at or after them: grid (B·H, ceil(T / BR)).
 * p = exp(scale·q·k − lse), ds = p (dy·v − delta); dv += p·dy, dk += scale·ds·q.
 */
export const GENERIC_DKDV = `${COMMON}
extern "C" __global__ void __launch_bounds__(128) tdm_attn_dkdv(const X_t* __restrict__ dy, const X_t* __restrict__ qkv,
    const L_t* __restrict__ lse, const X_c* __restrict__ delta, X_t* __restrict__ dqkv, int T, int H, int HD, double scale_in) {
  __shared__ X_c sk[BR * HDM];
  __shared__ X_c sv[BR * HDM];
  __shared__ X_c sq[LANES * KSM];
  __shared__ X_c sdy[LANES * KSM];
  const int bh = blockIdx.x, b = bh / H, h = bh - b * H;
  const int s0 = (gridDim.y - 1 - blockIdx.y) * BR;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const X_c scale = (X_c)scale_in;
  load_part(sk, HD, qkv, b, h, 1, s0, BR, T, H, scale, HD);
  load_part(sv, HD, qkv, b, h, 2, s0, BR, T, H, (X_c)1, HD);
  X_c dk[ROWS][NJ], dv[ROWS][NJ];
#pragma unroll
  for (int rr = 0; rr < ROWS; rr++)
#pragma unroll
    for (int j = 0; j < NJ; j++) { dk[rr][j] = 0; dv[rr][j] = 0; }
  for (int t0 = s0; t0 < T; t0 += LANES) {
    __syncthreads();
    load_part(sq, KS, qkv, b, h, 0, t0, LANES, T, H, (X_c)1, HD);
    load_rows(sdy, KS, dy, b, h, t0, LANES, T, H, HD);
    __syncthreads();
    const int t = t0 + lane;
    const bool inT = lane < LANES && t < T;
    const X_c rowLse = inT ? (X_c)ldL(lse, (long long)bh * T + t) : (X_c)0;
    const X_c rowDelta = inT ? delta[(long long)bh * T + t] : (X_c)0;
#pragma unroll
    for (int rr = 0; rr < ROWS; rr++) {
      const int r = warp * ROWS + rr, s = s0 + r;
      if (s >= T) continue;
      X_c p = 0, ds = 0;
      if (inT && s <= t) {
        X_c sc = 0, dp = 0;
        for (int i = 0; i < HD; i++) {
          sc += sq[lane * KS + i] * sk[r * HD + i];
          dp += sdy[lane * KS + i] * sv[r * HD + i];
        }
        p = m_exp(sc - rowLse);
        ds = p * (dp - rowDelta);
      }
      const int n = min(LANES, T - t0);
      for (int u = 0; u < n; u++) {
        const X_c pu = __shfl_sync(FULL, p, u), du = __shfl_sync(FULL, ds, u);
#pragma unroll
        for (int j = 0; j < NJ; j++) {
          const int i = lane + 32 * j;
          if (i < HD) {
            dv[rr][j] += pu * sdy[u * KS + i];
            dk[rr][j] += du * sq[u * KS + i];
          }
        }
      }
    }
  }
  const long long ld = 3LL * H * HD;
#pragma unroll
  for (int rr = 0; rr < ROWS; rr++) {
    const int s = s0 + warp * ROWS + rr;
    if (s >= T) continue;
    const long long row = ((long long)b * T + s) * ld + (long long)h * HD;
#pragma unroll
    for (int j = 0; j < NJ; j++) {
      const int i = lane + 32 * j;
      if (i < HD) {
        stX(dqkv, row + (long long)H * HD + i, dk[rr][j] * scale);
        stX(dqkv, row + 2LL * H * HD + i, dv[rr][j]);
      }
    }
  }
}
`;

/** dq for the block's BR query rows over the key tiles up to them: dq = scale·Σ ds·k. */
export const GENERIC_DQ = `${COMMON}
extern "C" __global__ void __launch_bounds__(128) tdm_attn_dq(const X_t* __restrict__ dy, const X_t* __restrict__ qkv,
    const L_t* __restrict__ lse, const X_c* __restrict__ delta, X_t* __restrict__ dqkv, int T, int H, int HD, double scale_in) {
  __shared__ X_c sq[BR * HDM];
  __shared__ X_c sdy[BR * HDM];
  __shared__ X_c sk[LANES * KSM];
  __shared__ X_c sv[LANES * KSM];
  const int bh = blockIdx.x, b = bh / H, h = bh - b * H;
  const int q0 = (gridDim.y - 1 - blockIdx.y) * BR;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const X_c scale = (X_c)scale_in;
  load_part(sq, HD, qkv, b, h, 0, q0, BR, T, H, scale, HD);
  load_rows(sdy, HD, dy, b, h, q0, BR, T, H, HD);
  X_c rowLse[ROWS], rowDelta[ROWS], dq[ROWS][NJ];
#pragma unroll
  for (int rr = 0; rr < ROWS; rr++) {
    const int t = q0 + warp * ROWS + rr;
    rowLse[rr] = t < T ? (X_c)ldL(lse, (long long)bh * T + t) : (X_c)0;
    rowDelta[rr] = t < T ? delta[(long long)bh * T + t] : (X_c)0;
#pragma unroll
    for (int j = 0; j < NJ; j++) dq[rr][j] = 0;
  }
  const int qlast = min(q0 + BR, T) - 1;
  for (int k0 = 0; k0 <= qlast; k0 += LANES) {
    __syncthreads();
    load_part(sk, KS, qkv, b, h, 1, k0, LANES, T, H, (X_c)1, HD);
    load_part(sv, KS, qkv, b, h, 2, k0, LANES, T, H, (X_c)1, HD);
    __syncthreads();
#pragma unroll
    for (int rr = 0; rr < ROWS; rr++) {
      const int r = warp * ROWS + rr, t = q0 + r;
      if (t >= T || k0 > t) continue;
      const int s = k0 + lane;
      X_c ds = 0;
      if (lane < LANES && s <= t) {
        X_c sc = 0, dp = 0;
        for (int i = 0; i < HD; i++) {
          sc += sq[r * HD + i] * sk[lane * KS + i];
          dp += sdy[r * HD + i] * sv[lane * KS + i];
        }
        ds = m_exp(sc - rowLse[rr]) * (dp - rowDelta[rr]);
      }
      const int n = min(LANES, t - k0 + 1);
      for (int u = 0; u < n; u++) {
        const X_c du = __shfl_sync(FULL, ds, u);
#pragma unroll
        for (int j = 0; j < NJ; j++) {
          const int i = lane + 32 * j;
          if (i < HD) dq[rr][j] += du * sk[u * KS + i];
        }
      }
    }
  }
  const long long ld = 3LL * H * HD;
#pragma unroll
  for (int rr = 0; rr < ROWS; rr++) {
    const int t = q0 + warp * ROWS + rr;
    if (t >= T) continue;
#pragma unroll
    for (int j = 0; j < NJ; j++) {
      const int i = lane + 32 * j;
      if (i < HD) stX(dqkv, ((long long)b * T + t) * ld + (long long)h * HD + i, dq[rr][j] * scale);
    }
  }
}
`;
