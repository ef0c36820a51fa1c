/**
 * The tensor-core forward (the default, v0, and with ATTN_V1 the opt-in v1; the kernels' scheme and
 * fragment layouts are in cuda-mma-common.ts), and the pieces of kernel text it shares with the FA2-style
 * forward (cuda-mma-fwd2.ts).
 */
import { blockSetup, MMA_COMMON } from './cuda-mma-common.js';

/** The forward entry's signature (one parameter list for every forward version: cuda.ts launches them so). */
export const FWD_ENTRY = `extern "C" __global__ void __launch_bounds__(128) tdm_attn_fwd_mma(const u16* __restrict__ qkv, u16* __restrict__ y,
    float* __restrict__ lse, int T, int H, float scale_log2) {`;

/** The forward's indices: FQ query rows per block, heaviest (last) first, 32 rows a warp. */
export const FWD_SETUP = blockSetup('const int q0 = (ntile - 1 - tile) * FQ;', 32, 'FQ');

/** The warp's output accumulators o and running row maxima m (base 2) and partial row sums l, per m tile. */
export const FWD_STATE = `  float o[MT][NT_D][4];
  float m[MT][2], l[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; mt++) {
#pragma unroll
    for (int nd = 0; nd < NT_D; nd++) { o[mt][nd][0] = 0.f; o[mt][nd][1] = 0.f; o[mt][nd][2] = 0.f; o[mt][nd][3] = 0.f; }
    m[mt][0] = NEG_INF; m[mt][1] = NEG_INF; l[mt][0] = 0.f; l[mt][1] = 0.f;
  }`;

/**
 * The row maxima mx0, mx1 of m tile mt's rows g, g + 8 over the quad's 4 lanes (each lane has reduced its
 * own columns).
 */
export const FWD_QUAD_MAX = `      mx0 = fmaxf(mx0, __shfl_xor_sync(FULL, mx0, 1));
      mx0 = fmaxf(mx0, __shfl_xor_sync(FULL, mx0, 2));
      mx1 = fmaxf(mx1, __shfl_xor_sync(FULL, mx1, 1));
      mx1 = fmaxf(mx1, __shfl_xor_sync(FULL, mx1, 2));`;

/**
 * m tile mt's partial row sums and outputs rescaled by c0, c1 (the old maximum's factor) with the tile's
 * row sums r0, r1 added; each lane keeps a partial sum over its own columns (the quad's are added at the end).
 */
export const FWD_RESCALE = `      l[mt][0] = l[mt][0] * c0 + r0;
      l[mt][1] = l[mt][1] * c1 + r1;
#pragma unroll
      for (int nd = 0; nd < NT_D; nd++) { o[mt][nd][0] *= c0; o[mt][nd][1] *= c0; o[mt][nd][2] *= c1; o[mt][nd][3] *= c1; }`;

/**
 * O += P·V over k step kk for both m tiles, pa[mt] the A fragment of P's step: ldmatrix.trans gives the
 * B fragments of two 8-wide column tiles of V at once (matrices: keys 0-7 / 8-15 x dims nd, nd + 1).
 */
export const FWD_PV_STEP = `#pragma unroll
      for (int nd = 0; nd < NT_D; nd += 2) {
        unsigned vb[4];
        ldsm_x4_trans(vb, sV + (kk * 16 + lr + (lm & 1) * 8) * RS + nd * 8 + (lm >> 1) * 8);
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
          mma(o[mt][nd], pa[mt], vb[0], vb[1]);
          mma(o[mt][nd + 1], pa[mt], vb[2], vb[3]);
        }
      }`;

/** y's rows (o over the quad's row sum) and lse (base e) of the warp's 32 rows from row0. */
export const FWD_STORE = `  u16* yb = y + (long long)b * T * C + (long long)h * HD;
#pragma unroll
  for (int mt = 0; mt < MT; mt++) {
    float l0 = l[mt][0], l1 = l[mt][1];
    l0 += __shfl_xor_sync(FULL, l0, 1);
    l0 += __shfl_xor_sync(FULL, l0, 2);
    l1 += __shfl_xor_sync(FULL, l1, 1);
    l1 += __shfl_xor_sync(FULL, l1, 2);
    const int rowA = row0 + 16 * mt, rowB = rowA + 8;
    store_rows(yb, C, o[mt], rowA, T, 1.f / l0, 1.f / l1, c);
    if (c == 0) {
      if (rowA < T) lse[(long long)bh * T + rowA] = (m[mt][0] + log2f(l0)) * LN2;
      if (rowB < T) lse[(long long)bh * T + rowB] = (m[mt][1] + log2f(l1)) * LN2;
    }
  }`;

/**
 * Forward: 128 query rows per block (grid (B·H, ceil(T / 128)), heaviest first), 32 per warp as two
 * 16-row m tiles, so every K and V fragment read from shared memory feeds two mma instead of one.
 * V stays row-major in shared memory and its B fragments come from ldmatrix.trans. Key tiles that lie
 * wholly above a warp's rows (the causal triangle) are skipped by that warp.
 */
export const MMA_FORWARD = `${MMA_COMMON}
#define FQ (2 * TILE)
#define MT 2
${FWD_ENTRY}
  // Two stages of (K, V) tiles: the next tile's copies (cp.async) run while this one is used. Q (128 rows)
  // is staged through stage 1 before the key loop.
  alignas(16) __shared__ u16 smem[2 * FQ * RS];
${FWD_SETUP}
  load_tile_async(smem, qb + C, ld, 0, T);
  load_tile_async(smem + TILE * RS, qb + 2 * C, ld, 0, T);
  cp_async_commit();
  load_rows(smem + FQ * RS, qb, ld, q0, FQ, T);
  __syncthreads();
  unsigned qa[MT][KS_D][4];
#pragma unroll
  for (int mt = 0; mt < MT; mt++) load_a(qa[mt], smem + FQ * RS, w0 + 16 * mt, g, c);
  __syncthreads();
${FWD_STATE}
  const int row0 = q0 + w0 + g;  // row of m tile mt, half hf: row0 + 16 mt + 8 hf
  const int tiles = (min(q0 + FQ, T) - 1) / TILE + 1;
  for (int kt = 0; kt < tiles; kt++) {
    const int k0 = kt * TILE;
    if (kt + 1 < tiles) {
      u16* next = smem + ((kt + 1) & 1) * FQ * RS;
      load_tile_async(next, qb + C, ld, k0 + TILE, T);
      load_tile_async(next + TILE * RS, qb + 2 * C, ld, k0 + TILE, T);
    }
    cp_async_commit();  // possibly empty: keeps one group per iteration
    cp_async_wait_1();  // this thread's copies of tile kt have landed
    __syncthreads();    // and everyone else's
    const u16* sK = smem + (kt & 1) * FQ * RS;
    const u16* sV = sK + TILE * RS;
    // Skip tiles whose every key is after every row of this warp (the warp still joins the barriers).
    if (k0 <= q0 + w0 + 31) {
    const bool mask = k0 + TILE - 1 > q0 + w0;
    float s[MT][NT_T][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int j = 0; j < NT_T; j++) { s[mt][j][0] = 0.f; s[mt][j][1] = 0.f; s[mt][j][2] = 0.f; s[mt][j][3] = 0.f; }
#if ATTN_V1
#pragma unroll
    for (int j = 0; j < NT_T; j++)
#pragma unroll
      for (int kk = 0; kk < KS_D; kk += 2) {
        unsigned kb[4];
        ldsm_x4(kb, sK + (j * 8 + (lane & 7)) * RS + kk * 16 + (lane >> 3) * 8);
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
          mma(s[mt][j], qa[mt][kk], kb[0], kb[1]);
          mma(s[mt][j], qa[mt][kk + 1], kb[2], kb[3]);
        }
      }
#else
#pragma unroll
    for (int j = 0; j < NT_T; j++)
#pragma unroll
      for (int kk = 0; kk < KS_D; kk++) {
        const unsigned b0 = lds32(sK + (j * 8 + g) * RS + kk * 16 + 2 * c);
        const unsigned b1 = lds32(sK + (j * 8 + g) * RS + kk * 16 + 8 + 2 * c);
#pragma unroll
        for (int mt = 0; mt < MT; mt++) mma(s[mt][j], qa[mt][kk], b0, b1);
      }
#endif
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
      float mx0 = NEG_INF, mx1 = NEG_INF;
#pragma unroll
      for (int j = 0; j < NT_T; j++) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const int key = k0 + j * 8 + 2 * c + (e & 1);
#if ATTN_V1
          float v = s[mt][j][e];  // raw: the scale (> 0) is applied to the maximum and in the exponent's FFMA
#else
          float v = s[mt][j][e] * scale_log2;
#endif
          if (mask && key > row0 + 16 * mt + (e < 2 ? 0 : 8)) v = NEG_INF;
          s[mt][j][e] = v;
        }
        mx0 = fmaxf(mx0, fmaxf(s[mt][j][0], s[mt][j][1]));
        mx1 = fmaxf(mx1, fmaxf(s[mt][j][2], s[mt][j][3]));
      }
${FWD_QUAD_MAX}
      // Every row has seen key 0 by now, so the new maximum is finite (a wholly masked tile keeps it).
#if ATTN_V1
      const float n0 = fmaxf(m[mt][0], mx0 * scale_log2), n1 = fmaxf(m[mt][1], mx1 * scale_log2);
      const float c0 = ex2(m[mt][0] - n0), c1 = ex2(m[mt][1] - n1);
#else
      const float n0 = fmaxf(m[mt][0], mx0), n1 = fmaxf(m[mt][1], mx1);
      const float c0 = exp2f(m[mt][0] - n0), c1 = exp2f(m[mt][1] - n1);
#endif
      m[mt][0] = n0;
      m[mt][1] = n1;
      float r0 = 0.f, r1 = 0.f;
#pragma unroll
      for (int j = 0; j < NT_T; j++) {
#if ATTN_V1
        s[mt][j][0] = ex2(fmaf(s[mt][j][0], scale_log2, -n0));
        s[mt][j][1] = ex2(fmaf(s[mt][j][1], scale_log2, -n0));
        s[mt][j][2] = ex2(fmaf(s[mt][j][2], scale_log2, -n1));
        s[mt][j][3] = ex2(fmaf(s[mt][j][3], scale_log2, -n1));
#else
        s[mt][j][0] = exp2f(s[mt][j][0] - n0);
        s[mt][j][1] = exp2f(s[mt][j][1] - n0);
        s[mt][j][2] = exp2f(s[mt][j][2] - n1);
        s[mt][j][3] = exp2f(s[mt][j][3] - n1);
#endif
        r0 += s[mt][j][0] + s[mt][j][1];
        r1 += s[mt][j][2] + s[mt][j][3];
      }
${FWD_RESCALE}
    }
    // O += P·V: P's accumulator tiles 2kk, 2kk+1 are the A fragment of k step kk.
    const int lr = lane & 7, lm = lane >> 3;
#pragma unroll
    for (int kk = 0; kk < KS_T; kk++) {
      unsigned pa[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; mt++) {
        pa[mt][0] = pack2(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        pa[mt][1] = pack2(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        pa[mt][2] = pack2(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        pa[mt][3] = pack2(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
${FWD_PV_STEP}
    }
    }
    __syncthreads();  // stage kt & 1 is refilled by the next iteration's prefetch
  }
${FWD_STORE}
}
`;
