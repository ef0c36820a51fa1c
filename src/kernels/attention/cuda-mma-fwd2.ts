/**
 * The opt-in FlashAttention-2-style forward on tensor cores (TANDEM_ATTN_MMA=v3, with the single-pass
 * backward; the attention lab's fwd2): 128 query rows per block and 4 warps of 32 rows as the current
 * forward, but Q stays in shared memory and its A fragments are re-read by ldmatrix.x4 at each k step
 * (8 registers live instead of 32), which leaves room for 128-key K/V tiles (half the barriers, row-max
 * rescales and cp.async bookkeeping per key); P is packed to 16 bits as it is formed; the diagonal tile
 * of the warps whose rows end before its key 64 is done as 64 keys; the causal mask only on tiles that
 * cross a warp's diagonal. With v1's ldmatrix.x4 B fragments and ex2.approx. Dynamic shared memory:
 * (128 Q rows + 2 stages × (K, V) × 128 rows) × (d + 8) × 2 bytes = 92,160 at d = 64 (opt-in attribute).
 */
import { MMA_COMMON } from './cuda-mma-common.js';
import {
  FWD_ENTRY,
  FWD_PV_STEP,
  FWD_QUAD_MAX,
  FWD_RESCALE,
  FWD_SETUP,
  FWD_STATE,
  FWD_STORE,
} from './cuda-mma.js';

/** Keys per K/V tile and query rows per block of the FA2-style forward. */
export const FA2_KEYS = 128;
export const FA2_ROWS = 128;

export const MMA_FORWARD_FA2 = `${MMA_COMMON}
#ifndef KN
#define KN 128
#endif
#define FQ 128
#define MT 2
#define SMEM_BYTES ((FQ + 4 * KN) * RS * 2)

// One K/V tile of NK keys (NK <= KN: the first NK keys of the staged tile) for the warp's 32 rows.
// sQw: the warp's first Q row in shared memory.
template <bool MASK, int NK>
static __device__ __forceinline__ void fwd_tile(float (*o)[NT_D][4], float (*m)[2], float (*l)[2], const u16* sQw,
    const u16* sK, const u16* sV, int k0, int row0, float sl2, int lane) {
  constexpr int NJ = NK / 8, KSK = NK / 16;
  const int lr = lane & 7, lm = lane >> 3, c = lane & 3;
  float s[MT][NJ][4];
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int j = 0; j < NJ; j++) { s[mt][j][0] = 0.f; s[mt][j][1] = 0.f; s[mt][j][2] = 0.f; s[mt][j][3] = 0.f; }
  // S = Q·Kᵀ one 16-wide k step at a time: Q's A fragments of the step for both m tiles (ldmatrix.x4:
  // rows 0-7 / 8-15 x cols 0-7 / 8-15 of the step; 8 registers live), then per pair of 8-key column
  // tiles one ldmatrix.x4 of K (the step's B fragments of both tiles) and four mma.
#pragma unroll
  for (int kk = 0; kk < KS_D; kk++) {
    unsigned qa[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
      ldsm_x4(qa[mt], sQw + (16 * mt + lr + (lm & 1) * 8) * RS + kk * 16 + (lm >> 1) * 8);
#pragma unroll
    for (int j = 0; j < NJ; j += 2) {
      unsigned kb[4];
      ldsm_x4(kb, sK + (j * 8 + lr + (lm >> 1) * 8) * RS + kk * 16 + (lm & 1) * 8);
#pragma unroll
      for (int mt = 0; mt < MT; mt++) {
        mma(s[mt][j], qa[mt], kb[0], kb[1]);
        mma(s[mt][j + 1], qa[mt], kb[2], kb[3]);
      }
    }
  }
  unsigned pk[MT][NJ][2];
#pragma unroll
  for (int mt = 0; mt < MT; mt++) {
    float mx0 = NEG_INF, mx1 = NEG_INF;
#pragma unroll
    for (int j = 0; j < NJ; j++) {
      if (MASK) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const int key = k0 + j * 8 + 2 * c + (e & 1);
          if (key > row0 + 16 * mt + (e < 2 ? 0 : 8)) s[mt][j][e] = NEG_INF;
        }
      }
      mx0 = fmaxf(mx0, fmaxf(s[mt][j][0], s[mt][j][1]));
      mx1 = fmaxf(mx1, fmaxf(s[mt][j][2], s[mt][j][3]));
    }
${FWD_QUAD_MAX}
    // Every processed tile holds a key at or before each of the warp's rows, so n0, n1 are finite.
    const float n0 = fmaxf(m[mt][0], mx0 * sl2), n1 = fmaxf(m[mt][1], mx1 * sl2);
    const float c0 = ex2(m[mt][0] - n0), c1 = ex2(m[mt][1] - n1);
    m[mt][0] = n0;
    m[mt][1] = n1;
    // P packed to 16-bit pairs as soon as it is formed (half the registers of the f32 scores).
    float r0 = 0.f, r1 = 0.f;
#pragma unroll
    for (int j = 0; j < NJ; j++) {
      const float p0 = ex2(fmaf(s[mt][j][0], sl2, -n0)), p1 = ex2(fmaf(s[mt][j][1], sl2, -n0));
      const float p2 = ex2(fmaf(s[mt][j][2], sl2, -n1)), p3 = ex2(fmaf(s[mt][j][3], sl2, -n1));
      r0 += p0 + p1;
      r1 += p2 + p3;
      pk[mt][j][0] = pack2(p0, p1);
      pk[mt][j][1] = pack2(p2, p3);
    }
${FWD_RESCALE}
  }
  // O += P·V (P's accumulator tiles 2kk, 2kk+1 are the A fragment of k step kk).
#pragma unroll
  for (int kk = 0; kk < KSK; kk++) {
    unsigned pa[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
      pa[mt][0] = pk[mt][2 * kk][0];
      pa[mt][1] = pk[mt][2 * kk][1];
      pa[mt][2] = pk[mt][2 * kk + 1][0];
      pa[mt][3] = pk[mt][2 * kk + 1][1];
    }
${FWD_PV_STEP}
  }
}

${FWD_ENTRY}
  // [Q: FQ rows][stage 0: K, V][stage 1: K, V], each KN rows; rows RS elements.
  extern __shared__ u16 smem[];  // dynamic: 16-byte aligned at least
  u16* const sQ = smem;
${FWD_SETUP}
  // Group 0: Q and the first (K, V) tile; the loop's first wait covers all three.
  load_rows_async<FQ, 128>(sQ, qb, ld, q0, T);
  load_rows_async<KN, 128>(smem + FQ * RS, qb + C, ld, 0, T);
  load_rows_async<KN, 128>(smem + (FQ + KN) * RS, qb + 2 * C, ld, 0, T);
  cp_async_commit();
${FWD_STATE}
  const int row0 = q0 + w0 + g, wlast = q0 + w0 + 31;
  const u16* sQw = sQ + w0 * RS;
  const int tiles = (min(q0 + FQ, T) - 1) / KN + 1;
  for (int kt = 0; kt < tiles; kt++) {
    const int k0 = kt * KN;
    if (kt + 1 < tiles) {
      u16* next = smem + (FQ + ((kt + 1) & 1) * 2 * KN) * RS;
      load_rows_async<KN, 128>(next, qb + C, ld, k0 + KN, T);
      load_rows_async<KN, 128>(next + KN * RS, qb + 2 * C, ld, k0 + KN, T);
    }
    cp_async_commit();  // possibly empty: keeps one group per iteration
    cp_async_wait_1();  // this thread's copies of tile kt (and Q) have landed
    __syncthreads();    // and everyone else's
    const u16* sK = smem + (FQ + (kt & 1) * 2 * KN) * RS;
    const u16* sV = sK + KN * RS;
    if (k0 <= wlast) {  // else every key of the tile is after every row of this warp
      if (k0 + KN - 1 <= q0 + w0 && k0 + KN <= T) fwd_tile<false, KN>(o, m, l, sQw, sK, sV, k0, row0, scale_log2, lane);
#if KN > 64
      else if (k0 + 64 > wlast) fwd_tile<true, 64>(o, m, l, sQw, sK, sV, k0, row0, scale_log2, lane);
#endif
      else fwd_tile<true, KN>(o, m, l, sQw, sK, sV, k0, row0, scale_log2, lane);
    }
    __syncthreads();  // stage kt & 1 is refilled by the next iteration's prefetch
  }
${FWD_STORE}
}
`;
