/**
 * The opt-in single-pass attention backward in halves (TANDEM_ATTN_MMA=v4, with the FA2-style forward;
 * the attention lab's bwd3): the v2 single pass (cuda-mma-bwd.ts: dK, dV per 64-key block, dQ by f32
 * atomics, the same prep and convert launches) with K's and V's A fragments re-read from shared memory
 * by ldmatrix.x4 at each k step instead of held in 32 registers, and each 64-query tile done as two
 * halves of 32 (the Sᵀ and dPᵀ accumulators 32 registers instead of 64), so it fits
 * __launch_bounds__(128, 3): three blocks (12 warps) an SM instead of two. Shared memory: [stage 0: Q, dY]
 * [stage 1: Q, dY][K][V], 64 rows of d + 8, and [dSᵀ] 64 rows of 72: 64,512 bytes at d = 64 (dynamic).
 */
import { MMA_COMMON } from '../attention/cuda-mma.js';
import { MMA_SINGLE_PASS_HELPERS } from './cuda-mma-bwd.js';

export const MMA_BWD_HALVES = `${MMA_COMMON}
${MMA_SINGLE_PASS_HELPERS}
// acc[j] += A · Bᵀ for A the warp's 16 rows of a row-major tile sA ([16][RS], from its first row) and B
// a 64-row tile sB, one 16-wide k step at a time: A's fragment by one ldmatrix.x4 (4 registers), B's for
// two 8-row column tiles by another (rows j*8.. / j*8+8.. x cols 0-7 / 8-15 of the step).
template <int NJ>
static __device__ __forceinline__ void mma_abt_ss(float (*acc)[4], const u16* sA, const u16* sB, int lane) {
  const int lr = lane & 7, lm = lane >> 3;
#pragma unroll
  for (int kk = 0; kk < KS_D; kk++) {
    unsigned a[4];
    ldsm_x4(a, sA + (lr + (lm & 1) * 8) * RS + kk * 16 + (lm >> 1) * 8);
#pragma unroll
    for (int j = 0; j < NJ; j += 2) {
      unsigned kb[4];
      ldsm_x4(kb, sB + (j * 8 + lr + (lm >> 1) * 8) * RS + kk * 16 + (lm & 1) * 8);
      mma(acc[j], a, kb[0], kb[1]);
      mma(acc[j + 1], a, kb[2], kb[3]);
    }
  }
}

extern "C" __global__ void __launch_bounds__(128, 3) tdm_attn_bwd_mma(const u16* __restrict__ dy, const u16* __restrict__ qkv,
    const float* __restrict__ lse, const float* __restrict__ delta, u16* __restrict__ dqkv, int T, int H, float scale,
    float scale_log2, float* __restrict__ dq_acc) {
  extern __shared__ u16 smem[];  // dynamic: 16-byte aligned at least
  u16* const sK = smem + 4 * TILE * RS;
  u16* const sV = smem + 5 * TILE * RS;
  u16* const sdS = smem + 6 * TILE * RS;
  __shared__ float sL[2][TILE];
  __shared__ float sD[2][TILE];
  const int bh = blockIdx.x, b = bh / H, h = bh - b * H;
  const int s0 = blockIdx.y * TILE;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
  const int C = H * HD, w0 = warp * 16;
  const long long ld = 3LL * C;
  const u16* qb = qkv + (long long)b * T * ld + (long long)h * HD;
  const u16* dyb = dy + (long long)b * T * C + (long long)h * HD;
  float* accb = dq_acc + (long long)b * T * C + (long long)h * HD;
  const int tiles = (T - s0 + TILE - 1) / TILE;
  auto prefetch = [&](int st, int t0) {
    load_rows_async<TILE, 128>(smem + st * 2 * TILE * RS, qb, ld, t0, T);
    load_rows_async<TILE, 128>(smem + (st * 2 + 1) * TILE * RS, dyb, C, t0, T);
  };
  auto stats = [&](int t0, float& l2, float& dl) {
    const int t = t0 + (int)threadIdx.x;
    const bool in = threadIdx.x < TILE && t < T;
    l2 = in ? lse[(long long)bh * T + t] * LOG2E : 0.f;
    dl = in ? delta[(long long)bh * T + t] : 0.f;
  };
  float nextL, nextD;
  stats(s0, nextL, nextD);
  if (threadIdx.x < TILE) {
    sL[0][threadIdx.x] = nextL;
    sD[0][threadIdx.x] = nextD;
  }
  prefetch(0, s0);
  cp_async_commit();
  // K and V stay in shared memory (the loop's first barrier orders these stores before their reads).
  load_tile(sK, qb + C, ld, s0, T);
  load_tile(sV, qb + 2 * C, ld, s0, T);
  float dk[NT_D][4], dv[NT_D][4];
#pragma unroll
  for (int nd = 0; nd < NT_D; nd++)
#pragma unroll
    for (int e = 0; e < 4; e++) { dk[nd][e] = 0.f; dv[nd][e] = 0.f; }
  const int keyA = s0 + w0 + g, keyB = keyA + 8;
  for (int it = 0; it < tiles; it++) {
    const int t0 = s0 + it * TILE, st = it & 1;
    if (it + 1 < tiles) {
      prefetch(st ^ 1, t0 + TILE);
      stats(t0 + TILE, nextL, nextD);
    }
    cp_async_commit();  // possibly empty: keeps one group per iteration
    cp_async_wait_1();  // this thread's copies of tile it have landed
    __syncthreads();    // and everyone else's
    const u16* sQ = smem + st * 2 * TILE * RS;
    const u16* sdY = sQ + TILE * RS;
    const float* sLt = sL[st];
    const float* sDt = sD[st];
    const bool diag = t0 == s0;
    // The tile's queries in two halves of 32: Sᵀ, dPᵀ of one half (32 accumulator registers, not 64),
    // then its P, dS, their parts of dV and dK, and its dSᵀ columns in shared memory.
#pragma unroll
    for (int hf = 0; hf < 2; hf++) {
      constexpr int NJ = NT_T / 2;
      float p[NJ][4], ds[NJ][4];
#pragma unroll
      for (int j = 0; j < NJ; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) { p[j][e] = 0.f; ds[j][e] = 0.f; }
      mma_abt_ss<NJ>(p, sK + w0 * RS, sQ + hf * 32 * RS, lane);
      mma_abt_ss<NJ>(ds, sV + w0 * RS, sdY + hf * 32 * RS, lane);
      unsigned pp[NJ][2], dsp[NJ][2];
#pragma unroll
      for (int j = 0; j < NJ; j++) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const int col = hf * 32 + j * 8 + 2 * c + (e & 1), t = t0 + col;
          float pv = ex2(fmaf(p[j][e], scale_log2, -sLt[col]));
          if (t >= T || (diag && t < (e < 2 ? keyA : keyB))) pv = 0.f;
          p[j][e] = pv;
          ds[j][e] = pv * (ds[j][e] - sDt[col]);
        }
        pp[j][0] = pack2(p[j][0], p[j][1]);
        pp[j][1] = pack2(p[j][2], p[j][3]);
        dsp[j][0] = pack2(ds[j][0], ds[j][1]);
        dsp[j][1] = pack2(ds[j][2], ds[j][3]);
        *(unsigned*)(sdS + (w0 + g) * DSRS + hf * 32 + j * 8 + 2 * c) = dsp[j][0];
        *(unsigned*)(sdS + (w0 + g + 8) * DSRS + hf * 32 + j * 8 + 2 * c) = dsp[j][1];
      }
      mma_pv_packed<NJ / 2>(dv, pp, sdY + hf * 32 * RS, lane);
      mma_pv_packed<NJ / 2>(dk, dsp, sQ + hf * 32 * RS, lane);
    }
    __syncthreads();  // dSᵀ complete
    dq_accumulate(accb, sdS, sK, t0, w0, T, C, lane);
    if (it + 1 < tiles && threadIdx.x < TILE) {
      sL[st ^ 1][threadIdx.x] = nextL;
      sD[st ^ 1][threadIdx.x] = nextD;
    }
    __syncthreads();  // stage st ^ 1's statistics are in; stage st and dSᵀ are rewritten next
  }
  u16* out = dqkv + (long long)b * T * ld + (long long)h * HD;
  store_rows(out + C, ld, dk, keyA, T, scale, scale, c);
  store_rows(out + 2 * C, ld, dv, keyA, T, 1.f, 1.f, c);
}
`;
