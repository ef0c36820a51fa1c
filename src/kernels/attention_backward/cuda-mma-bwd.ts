/**
 * The opt-in single-pass attention backward on tensor cores (TANDEM_ATTN_MMA=v2; FlashAttention-2's
 * scheme, the attention lab's bwd2): one kernel per 64-key block computes dK and dV in registers as the
 * two-kernel backward's dkdv does, and adds each (key block, query tile)'s dQ = dS·K into an f32
 * accumulator [B, T, C] by vector atomics, instead of a second kernel that recomputes S, P and dP per
 * query tile: 5 matrix products a tile pair instead of 4 + 3, one pass over Q and dY. A prep kernel
 * computes delta = rowsum(dY ⊙ Y) and zeroes the accumulator in one pass; a convert kernel writes
 * scale · dQ into dqkv's q columns. Unlike the two-kernel backward, the order of the f32 additions (and
 * so dQ's last bits) depends on scheduling.
 *
 * Compiled with ATTN_V1 (ldmatrix.x4 B fragments, ex2.approx): head dims 32 and 64. Shared memory:
 * [stage 0: Q, dY][stage 1: Q, dY][K], 64 rows of d + 8 each, and [dSᵀ], 64 rows of 72 (55,296 bytes at
 * d = 64: dynamic, over the default 48 KiB), plus 1 KiB of lse and delta. (The lab's bwd2 gave dSᵀ the
 * head dim's stride: right at d = 64 only.)
 */
import { MMA_COMMON, tileIndex } from '../attention/cuda-mma-common.js';
import {
  KEY_BLOCK_SETUP,
  KEY_LOOP_HEAD,
  KEY_LOOP_TAIL,
  KEY_TILE_PRODUCTS,
  deltaRows,
  keyBlockPipeline,
  keyFragments,
} from './cuda-mma-bwd-parts.js';

/**
 * The single pass's prep (delta, the zeroed accumulator) and convert (scale · dQ into dqkv) kernels, which
 * the halves variant (cuda-mma-bwd-halves.ts) shares: appended to its source by the lab's gen-base.mjs.
 */
export const MMA_SINGLE_PASS_AUX = `// dqkv's q columns = 16-bit(scale · dq_acc): 64 rows of one head per block, 16 bytes of output a thread
// a step (the accumulator read as 2 x 16 bytes). The main kernel's parameter list (one argument list for
// both; bench/attention-lab launches them so).
extern "C" __global__ void __launch_bounds__(128) tdm_attn_dq_convert(const u16* __restrict__ dy, const u16* __restrict__ qkv,
    const float* __restrict__ lse, const float* __restrict__ delta, u16* __restrict__ dqkv, int T, int H, float scale,
    float scale_log2, const float* __restrict__ dq_acc) {
${tileIndex('TILE')}
  const int b = bh / H, h = bh - b * H;
  const int C = H * HD, t0 = tile * TILE;
  const long long ld = 3LL * C;
  for (int e = threadIdx.x; e < TILE * (HD / 8); e += blockDim.x) {
    const int r = e / (HD / 8), col = (e - r * (HD / 8)) * 8, t = t0 + r;
    if (t >= T) continue;
    const float* src = dq_acc + ((long long)b * T + t) * C + h * HD + col;
    const tdm_v4 x = *(const tdm_v4*)src, y = *(const tdm_v4*)(src + 4);
    tdm_v4 v;
    v.x = pack2(__uint_as_float(x.x) * scale, __uint_as_float(x.y) * scale);
    v.y = pack2(__uint_as_float(x.z) * scale, __uint_as_float(x.w) * scale);
    v.z = pack2(__uint_as_float(y.x) * scale, __uint_as_float(y.y) * scale);
    v.w = pack2(__uint_as_float(y.z) * scale, __uint_as_float(y.w) * scale);
    *(tdm_v4*)(dqkv + ((long long)b * T + t) * ld + h * HD + col) = v;
  }
}

// delta (deltaRows), and the accumulator's 64 x HD block of the same rows and head zeroed.
extern "C" __global__ void __launch_bounds__(128) tdm_attn_bwd_prep(const u16* __restrict__ dy, const u16* __restrict__ y,
    float* __restrict__ delta, float* __restrict__ dq_acc, int T, int H) {
${deltaRows(`      tdm_v4 z; z.x = 0u; z.y = 0u; z.z = 0u; z.w = 0u;
      *(tdm_v4*)(dq_acc + off) = z;
      *(tdm_v4*)(dq_acc + off + 4) = z;`)}
}
`;

/**
 * Device helpers both single-pass kernels (this one and cuda-mma-bwd-halves.ts) use: dSᵀ's row stride,
 * the P·M product from packed 16-bit operands, and a warp's dQ rows of one tile pair added into the f32
 * accumulator.
 */
export const MMA_SINGLE_PASS_HELPERS = `// dSᵀ is 64 keys x 64 queries whatever the head dim: its own row stride (padded by 8 as RS is; the
// lab's kernels used RS, right at d = 64 only).
#define DSRS (TILE + 8)
// acc[nd] += P · M for P the warp's 16 x (16 KS) operand given as packed 16-bit pairs pk (pk[j][0]: row g,
// cols 8j + 2c..; pk[j][1]: row g + 8) and M a (16 KS) x HD row-major tile s [..][RS] (ldmatrix.trans).
template <int KS>
static __device__ __forceinline__ void mma_pv_packed(float (*acc)[4], unsigned (*pk)[2], const u16* s, int lane) {
  const int lr = lane & 7, lm = lane >> 3;
#pragma unroll
  for (int kk = 0; kk < KS; kk++) {
    const unsigned a[4] = {pk[2 * kk][0], pk[2 * kk][1], pk[2 * kk + 1][0], pk[2 * kk + 1][1]};
    mma_pv_step(acc, a, s, kk, lr, lm);
  }
}
// dQ rows t0 + w0 .. + 15 (this warp's 16 queries) = dS[q][0..64) · K, added into the accumulator rows of
// accb (row stride C) by red.global.add.v2: A fragments of dS by ldmatrix.x4.trans of dSᵀ sdS (matrices:
// keys 0-7 / 8-15 of the step x queries 0-7 / 8-15), K's B fragments by ldmatrix.trans of sK.
static __device__ __forceinline__ void dq_accumulate(float* accb, const u16* sdS, const u16* sK, int t0, int w0, int T,
    int C, int lane) {
  const int lr = lane & 7, lm = lane >> 3, g = lane >> 2, c = lane & 3;
  float dq[NT_D][4];
#pragma unroll
  for (int nd = 0; nd < NT_D; nd++) { dq[nd][0] = 0.f; dq[nd][1] = 0.f; dq[nd][2] = 0.f; dq[nd][3] = 0.f; }
#pragma unroll
  for (int kk = 0; kk < KS_T; kk++) {
    unsigned a[4];
    ldsm_x4_trans(a, sdS + (kk * 16 + lr + (lm >> 1) * 8) * DSRS + w0 + (lm & 1) * 8);
    mma_pv_step(dq, a, sK, kk, lr, lm);
  }
  const int qA = t0 + w0 + g, qB = qA + 8;
#pragma unroll
  for (int nd = 0; nd < NT_D; nd++) {
    const int col = nd * 8 + 2 * c;
    if (qA < T) red_add_v2(accb + (long long)qA * C + col, dq[nd][0], dq[nd][1]);
    if (qB < T) red_add_v2(accb + (long long)qB * C + col, dq[nd][2], dq[nd][3]);
  }
}
`;

/**
 * P and dS of the single pass from the Sᵀ and dPᵀ accumulators p, ds of NJ column tiles (queries
 * col0 + 8j + 2c.. of the tile; `col0` empty or an offset with its ' + '): pp, dsp their packed 16-bit
 * pairs (the A operands of the dV and dK products), and dSᵀ stored in sdS for the dQ product.
 */
export const singlePassProbs = (
  nj: string,
  col0: string,
): string => `    unsigned pp[${nj}][2], dsp[${nj}][2];
#pragma unroll
    for (int j = 0; j < ${nj}; j++) {
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const int col = ${col0}j * 8 + 2 * c + (e & 1), t = t0 + col;
        float pv = ex2(fmaf(p[j][e], scale_log2, -sLt[col]));
        if (t >= T || (diag && t < (e < 2 ? keyA : keyB))) pv = 0.f;
        p[j][e] = pv;
        ds[j][e] = pv * (ds[j][e] - sDt[col]);
      }
      pp[j][0] = pack2(p[j][0], p[j][1]);
      pp[j][1] = pack2(p[j][2], p[j][3]);
      dsp[j][0] = pack2(ds[j][0], ds[j][1]);
      dsp[j][1] = pack2(ds[j][2], ds[j][3]);
      // dSᵀ rows w0 + g, w0 + g + 8 (keys), cols 8j + 2c.. (queries): 8 groups x 4 lanes hit 32 banks.
      *(unsigned*)(sdS + (w0 + g) * DSRS + ${col0}j * 8 + 2 * c) = dsp[j][0];
      *(unsigned*)(sdS + (w0 + g + 8) * DSRS + ${col0}j * 8 + 2 * c) = dsp[j][1];
    }`;

/** The single pass's indices (KEY_BLOCK_SETUP) and the dQ accumulator's base accb for its batch and head. */
export const SINGLE_PASS_SETUP = `${KEY_BLOCK_SETUP}
  float* accb = dq_acc + (long long)b * T * C + (long long)h * HD;`;

export const MMA_BWD_SINGLE_PASS = `${MMA_COMMON}
${MMA_SINGLE_PASS_HELPERS}
extern "C" __global__ void __launch_bounds__(128) tdm_attn_bwd_mma(const u16* __restrict__ dy, const u16* __restrict__ qkv,
    const float* __restrict__ lse, const float* __restrict__ delta, u16* __restrict__ dqkv, int T, int H, float scale,
    float scale_log2, float* __restrict__ dq_acc) {
  extern __shared__ u16 smem[];
  u16* const sK = smem + 4 * TILE * RS;
  u16* const sdS = smem + 5 * TILE * RS;
${SINGLE_PASS_SETUP}
${keyBlockPipeline('load_tile_async')}
  // K stays in shared memory for the dQ products; V is staged through the dSᵀ tile (RS ≤ DSRS): the
  // loop's first barrier has every warp read V out of sdS before dSᵀ is stored there.
${keyFragments('sK', 'sdS')}
${KEY_LOOP_HEAD}
${KEY_TILE_PRODUCTS}
${singlePassProbs('NT_T', '')}
    mma_pv_packed<KS_T>(dv, pp, sdY, lane);
    mma_pv_packed<KS_T>(dk, dsp, sQ, lane);
    __syncthreads();  // dSᵀ complete
    dq_accumulate(accb, sdS, sK, t0, w0, T, C, lane);
${KEY_LOOP_TAIL}
}
${MMA_SINGLE_PASS_AUX}`;
