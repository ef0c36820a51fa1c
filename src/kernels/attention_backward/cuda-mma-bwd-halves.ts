/**
 * The opt-in single-pass attention backward in halves (TANDEM_ATTN_MMA=v4, with the FA2-style forward;
 * the attention lab's bwd3): the v2 single pass (cuda-mma-bwd.ts: dK, dV per 64-key block, dQ by f32
 * atomics, the same prep and convert launches) with K's and V's A fragments re-read from shared memory
 * by ldmatrix.x4 at each k step instead of held in 32 registers, and each 64-query tile done as two
 * halves of 32 (the Sᵀ and dPᵀ accumulators 32 registers instead of 64), so it fits
 * __launch_bounds__(128, 3): three blocks (12 warps) an SM instead of two. Shared memory: [stage 0: Q, dY]
 * [stage 1: Q, dY][K][V], 64 rows of d + 8, and [dSᵀ] 64 rows of 72: 64,512 bytes at d = 64 (dynamic).
 */
import { MMA_COMMON } from '../attention/cuda-mma-common.js';
import { MMA_SINGLE_PASS_HELPERS, SINGLE_PASS_SETUP, singlePassProbs } from './cuda-mma-bwd.js';
import { KEY_LOOP_HEAD, KEY_LOOP_TAIL, keyBlockPipeline } from './cuda-mma-bwd-parts.js';

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
${SINGLE_PASS_SETUP}
${keyBlockPipeline('load_rows_async<TILE, 128>')}
  // K and V stay in shared memory (the loop's first barrier orders these stores before their reads).
  load_tile(sK, qb + C, ld, s0, T);
  load_tile(sV, qb + 2 * C, ld, s0, T);
${KEY_LOOP_HEAD}
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
${singlePassProbs('NJ', 'hf * 32 + ')}
      mma_pv_packed<NJ / 2>(dv, pp, sdY + hf * 32 * RS, lane);
      mma_pv_packed<NJ / 2>(dk, dsp, sQ + hf * 32 * RS, lane);
    }
    __syncthreads();  // dSᵀ complete
    dq_accumulate(accb, sdS, sK, t0, w0, T, C, lane);
${KEY_LOOP_TAIL}
}
`;
