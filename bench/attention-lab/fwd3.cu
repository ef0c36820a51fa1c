// fwd3: FlashAttention-2-style forward with 8 warps (256 threads) per 128 query rows, 16 rows a warp
// (one m tile), Q's A fragments re-read from shared memory by ldmatrix per k step as in fwd2. Against
// fwd2: half the score and output accumulators per thread, so two blocks (16 warps) fit on an SM under
// __launch_bounds__(256, 2) (128 registers), but each K/V fragment read from shared memory feeds one mma
// instead of two (twice the ldmatrix per mma). 64-key K/V tiles in two cp.async stages: shared memory
// (128 Q rows + 4 x 64) x RS x 2 bytes = 55296 (dynamic: variants.json's "smem"). -DKN=128 compiles but
// spills under the 128-register cap (S alone is 64 registers): not a variant. Holding Q's fragments in
// registers (16) spilled too. On a tile that crosses its diagonal a warp skips the second 64 keys when
// they are all after its rows (KN = 128 only). Kept from fwd1: ldmatrix.x4 for K, the ex2.approx
// exponent with the scale in one FFMA, the mask only on tiles that cross a warp's diagonal.
#include "lab.cuh"
#ifndef KN
#define KN 64
#endif
#define FQ 128
#define NW 8

// load_rows_async comes from common.cuh (Tandem's FA2-style forward and halves backward use it).

// One K/V tile of NK keys (NK <= KN: the first NK keys of the staged tile) for the warp's 16 rows.
template <bool MASK, int NK>
static __device__ __forceinline__ void fwd_tile(float (*o)[4], float* m, float* l, const u16* sQw,
    const u16* sK, const u16* sV, int k0, int row0, float sl2, int lane) {
  constexpr int NJ = NK / 8, KSK = NK / 16;
  const int lr = lane & 7, lm = lane >> 3, c = lane & 3;
  float s[NJ][4];
#pragma unroll
  for (int j = 0; j < NJ; j++) { s[j][0] = 0.f; s[j][1] = 0.f; s[j][2] = 0.f; s[j][3] = 0.f; }
  // S = Q·Kᵀ one k step at a time: the step's Q A fragment (4 registers), then per pair of 8-key column
  // tiles one ldmatrix.x4 of K (the step's B fragments of both) and two mma.
#pragma unroll
  for (int kk = 0; kk < KS_D; kk++) {
    unsigned qa[4];
    ldsm_x4(qa, sQw + (lr + (lm & 1) * 8) * RS + kk * 16 + (lm >> 1) * 8);
#pragma unroll
    for (int j = 0; j < NJ; j += 2) {
      unsigned kb[4];
      ldsm_x4(kb, sK + (j * 8 + lr + (lm >> 1) * 8) * RS + kk * 16 + (lm & 1) * 8);
      mma(s[j], qa, kb[0], kb[1]);
      mma(s[j + 1], qa, kb[2], kb[3]);
    }
  }
  float mx0 = NEG_INF, mx1 = NEG_INF;
#pragma unroll
  for (int j = 0; j < NJ; j++) {
    if (MASK) {
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const int key = k0 + j * 8 + 2 * c + (e & 1);
        if (key > row0 + (e < 2 ? 0 : 8)) s[j][e] = NEG_INF;
      }
    }
    mx0 = fmaxf(mx0, fmaxf(s[j][0], s[j][1]));
    mx1 = fmaxf(mx1, fmaxf(s[j][2], s[j][3]));
  }
  mx0 = fmaxf(mx0, __shfl_xor_sync(FULL, mx0, 1));
  mx0 = fmaxf(mx0, __shfl_xor_sync(FULL, mx0, 2));
  mx1 = fmaxf(mx1, __shfl_xor_sync(FULL, mx1, 1));
  mx1 = fmaxf(mx1, __shfl_xor_sync(FULL, mx1, 2));
  // Every processed tile holds a key at or before each of the warp's rows, so n0, n1 are finite.
  const float n0 = fmaxf(m[0], mx0 * sl2), n1 = fmaxf(m[1], mx1 * sl2);
  const float c0 = ex2(m[0] - n0), c1 = ex2(m[1] - n1);
  m[0] = n0;
  m[1] = n1;
  unsigned pk[NJ][2];
  float r0 = 0.f, r1 = 0.f;
#pragma unroll
  for (int j = 0; j < NJ; j++) {
    const float p0 = ex2(fmaf(s[j][0], sl2, -n0)), p1 = ex2(fmaf(s[j][1], sl2, -n0));
    const float p2 = ex2(fmaf(s[j][2], sl2, -n1)), p3 = ex2(fmaf(s[j][3], sl2, -n1));
    r0 += p0 + p1;
    r1 += p2 + p3;
    pk[j][0] = pack2(p0, p1);
    pk[j][1] = pack2(p2, p3);
  }
  l[0] = l[0] * c0 + r0;
  l[1] = l[1] * c1 + r1;
#pragma unroll
  for (int nd = 0; nd < NT_D; nd++) { o[nd][0] *= c0; o[nd][1] *= c0; o[nd][2] *= c1; o[nd][3] *= c1; }
  // O += P·V (P's accumulator tiles 2kk, 2kk+1 are the A fragment of k step kk).
#pragma unroll
  for (int kk = 0; kk < KSK; kk++) {
    const unsigned pa[4] = {pk[2 * kk][0], pk[2 * kk][1], pk[2 * kk + 1][0], pk[2 * kk + 1][1]};
#pragma unroll
    for (int nd = 0; nd < NT_D; nd += 2) {
      unsigned vb[4];
      ldsm_x4_trans(vb, sV + (kk * 16 + lr + (lm & 1) * 8) * RS + nd * 8 + (lm >> 1) * 8);
      mma(o[nd], pa, vb[0], vb[1]);
      mma(o[nd + 1], pa, vb[2], vb[3]);
    }
  }
}

extern "C" __global__ void __launch_bounds__(NW * 32, 2) tdm_attn_fwd_mma(const u16* __restrict__ qkv, u16* __restrict__ y,
    float* __restrict__ lse, int T, int H, float scale_log2) {
  // [Q: FQ rows][stage 0: K, V][stage 1: K, V], each KN rows; rows RS elements.
  extern __shared__ __align__(16) u16 smem[];
  const u16* sQ = smem;
  const int bh = blockIdx.x, b = bh / H, h = bh - b * H;
  const int q0 = (gridDim.y - 1 - blockIdx.y) * FQ;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
  const int C = H * HD, w0 = warp * 16;
  const long long ld = 3LL * C;
  const u16* qb = qkv + (long long)b * T * ld + (long long)h * HD;
  // Group 0: Q and the first (K, V) tile; the loop's first wait covers all three.
  load_rows_async<FQ, NW * 32>(smem, qb, ld, q0, T);
  load_rows_async<KN, NW * 32>(smem + FQ * RS, qb + C, ld, 0, T);
  load_rows_async<KN, NW * 32>(smem + (FQ + KN) * RS, qb + 2 * C, ld, 0, T);
  cp_async_commit();
  const u16* sQw = sQ + w0 * RS;
  float o[NT_D][4], m[2], l[2];
#pragma unroll
  for (int nd = 0; nd < NT_D; nd++) { o[nd][0] = 0.f; o[nd][1] = 0.f; o[nd][2] = 0.f; o[nd][3] = 0.f; }
  m[0] = NEG_INF; m[1] = NEG_INF; l[0] = 0.f; l[1] = 0.f;
  const int row0 = q0 + w0 + g, wlast = q0 + w0 + 15;
  const int tiles = (min(q0 + FQ, T) - 1) / KN + 1;
  for (int kt = 0; kt < tiles; kt++) {
    const int k0 = kt * KN;
    if (kt + 1 < tiles) {
      u16* next = smem + (FQ + ((kt + 1) & 1) * 2 * KN) * RS;
      load_rows_async<KN, NW * 32>(next, qb + C, ld, k0 + KN, T);
      load_rows_async<KN, NW * 32>(next + KN * RS, qb + 2 * C, ld, k0 + KN, T);
    }
    cp_async_commit();  // possibly empty: keeps one group per iteration
    cp_async_wait_1();  // this thread's copies of tile kt have landed
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
  u16* yb = y + (long long)b * T * C + (long long)h * HD;
  float l0 = l[0], l1 = l[1];
  l0 += __shfl_xor_sync(FULL, l0, 1);
  l0 += __shfl_xor_sync(FULL, l0, 2);
  l1 += __shfl_xor_sync(FULL, l1, 1);
  l1 += __shfl_xor_sync(FULL, l1, 2);
  const int rowB = row0 + 8;
  store_rows(yb, C, o, row0, T, 1.f / l0, 1.f / l1, c);
  if (c == 0) {
    if (row0 < T) lse[(long long)bh * T + row0] = (m[0] + log2f(l0)) * LN2;
    if (rowB < T) lse[(long long)bh * T + rowB] = (m[1] + log2f(l1)) * LN2;
  }
}
