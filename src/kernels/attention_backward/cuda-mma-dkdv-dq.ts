/**
 * The two-kernel tensor-core backward (the default, v0, and with ATTN_V1 the opt-in v1): dk and dv per
 * key tile, dq per query tile, each element of dqkv written once (no atomics). The scheme and fragment
 * layouts are in attention/cuda-mma-common.ts.
 */
import { blockSetup, MMA_COMMON } from '../attention/cuda-mma-common.js';
import {
  KEY_BLOCK_SETUP,
  KEY_LOOP_HEAD,
  KEY_LOOP_TAIL,
  KEY_TILE_PRODUCTS,
  deltaRows,
  keyBlockPipeline,
  keyFragments,
  scorePair,
} from './cuda-mma-bwd-parts.js';

/**
 * dk, dv for 64 key rows per block over the query tiles from the diagonal on: grid (B·H, ceil(T / 64)),
 * block y = key tile (the first tiles have the most queries, so they start first).
 * Sᵀ = K·Qᵀ, Pᵀ = exp(scale·Sᵀ − lse), dPᵀ = V·dYᵀ, dSᵀ = Pᵀ ⊙ (dPᵀ − delta); dV += Pᵀ·dY, dK += dSᵀ·Q.
 */
export const MMA_DKDV = `${MMA_COMMON}
// Blocks an SM must hold (launch bounds: registers capped to fit), TANDEM_ATTN_DKDV_BLOCKS / _DQ_BLOCKS.
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
extern "C" __global__ void __launch_bounds__(128, MIN_BLOCKS) tdm_attn_dkdv_mma(const u16* __restrict__ dy, const u16* __restrict__ qkv,
    const float* __restrict__ lse, const float* __restrict__ delta, u16* __restrict__ dqkv, int T, int H, float scale, float scale_log2) {
  // Two stages of (Q, dY) tiles filled by cp.async (the next under the current one's products), with
  // their lse (base 2) and delta; the block's own K, V rows are staged through stage 1 first.
  alignas(16) __shared__ u16 smem[4 * TILE * RS];
${KEY_BLOCK_SETUP}
${keyBlockPipeline('load_tile_async')}
${keyFragments('smem + 2 * TILE * RS', 'smem + 3 * TILE * RS')}
  __syncthreads();
${KEY_LOOP_HEAD}
${KEY_TILE_PRODUCTS}
#if ATTN_FAST
    // ATTN_FAST (the default; TANDEM_ATTN_FAST=0 for the old text): a lane's two query columns' lse and
    // delta as one 8-byte load each, ex2.approx with the scale in one FFMA (prob2), and the mask only on
    // the diagonal or last tile.
    const bool edge = diag || t0 + TILE > T;
#pragma unroll
    for (int j = 0; j < NT_T; j++) {
      const int col = j * 8 + 2 * c;
      const tdm_f2 l2 = *(const tdm_f2*)(sLt + col), dl = *(const tdm_f2*)(sDt + col);
#pragma unroll
      for (int e = 0; e < 4; e++) {
        float pv = prob2(p[j][e], scale_log2, (e & 1) ? l2.y : l2.x);
        if (edge) {
          const int t = t0 + col + (e & 1);
          if (t >= T || (diag && t < (e < 2 ? keyA : keyB))) pv = 0.f;
        }
        p[j][e] = pv;
        ds[j][e] = pv * (ds[j][e] - ((e & 1) ? dl.y : dl.x));
      }
    }
#else
#pragma unroll
    for (int j = 0; j < NT_T; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const int col = j * 8 + 2 * c + (e & 1), t = t0 + col;
        float pv = prob2(p[j][e], scale_log2, sLt[col]);
        if (t >= T || (diag && t < (e < 2 ? keyA : keyB))) pv = 0.f;
        p[j][e] = pv;
        ds[j][e] = pv * (ds[j][e] - sDt[col]);
      }
#endif
    mma_pv(dv, p, sdY, lane);
    mma_pv(dk, ds, sQ, lane);
${KEY_LOOP_TAIL}
}

// delta[bh, t] = Σ dY ⊙ Y over the head's columns (deltaRows), for the two-kernel backward.
extern "C" __global__ void __launch_bounds__(128) tdm_attn_delta_mma(const u16* __restrict__ dy, const u16* __restrict__ y,
    float* __restrict__ delta, int T, int H) {
${deltaRows('')}
}
`;

/**
 * dq for 64 query rows per block over the key tiles up to the diagonal: grid (B·H, ceil(T / 64)),
 * heaviest first. S = Q·Kᵀ, P = exp(scale·S − lse), dP = dY·Vᵀ, dS = P ⊙ (dP − delta), dQ = scale·dS·K.
 */
export const MMA_DQ = `${MMA_COMMON}
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
extern "C" __global__ void __launch_bounds__(128, MIN_BLOCKS) tdm_attn_dq_mma(const u16* __restrict__ dy, const u16* __restrict__ qkv,
    const float* __restrict__ lse, const float* __restrict__ delta, u16* __restrict__ dqkv, int T, int H, float scale, float scale_log2) {
  // Two stages of (K, V) tiles filled by cp.async; the block's Q and dY rows are staged through stage 1.
  alignas(16) __shared__ u16 smem[4 * TILE * RS];
${blockSetup('const int q0 = (ntile - 1 - tile) * TILE;', 16, 'TILE')}
  load_tile_async(smem, qb + C, ld, 0, T);
  load_tile_async(smem + TILE * RS, qb + 2 * C, ld, 0, T);
  cp_async_commit();
  load_tile(smem + 2 * TILE * RS, qb, ld, q0, T);
  load_tile(smem + 3 * TILE * RS, dy + (long long)b * T * C + (long long)h * HD, C, q0, T);
  __syncthreads();
  unsigned qa[KS_D][4], dya[KS_D][4];
  load_a(qa, smem + 2 * TILE * RS, w0, g, c);
  load_a(dya, smem + 3 * TILE * RS, w0, g, c);
  __syncthreads();
  const int rowA = q0 + w0 + g, rowB = rowA + 8;
  const float lA = rowA < T ? lse[(long long)bh * T + rowA] * LOG2E : 0.f;
  const float lB = rowB < T ? lse[(long long)bh * T + rowB] * LOG2E : 0.f;
  const float dA = rowA < T ? delta[(long long)bh * T + rowA] : 0.f;
  const float dB = rowB < T ? delta[(long long)bh * T + rowB] : 0.f;
  float dq[NT_D][4];
#pragma unroll
  for (int nd = 0; nd < NT_D; nd++) { dq[nd][0] = 0.f; dq[nd][1] = 0.f; dq[nd][2] = 0.f; dq[nd][3] = 0.f; }
  const int last = q0 / TILE;
  for (int kt = 0; kt <= last; kt++) {
    const int k0 = kt * TILE, st = kt & 1;
    if (kt < last) {
      u16* next = smem + (st ^ 1) * 2 * TILE * RS;
      load_tile_async(next, qb + C, ld, k0 + TILE, T);
      load_tile_async(next + TILE * RS, qb + 2 * C, ld, k0 + TILE, T);
    }
    cp_async_commit();  // possibly empty: keeps one group per iteration
    cp_async_wait_1();  // this thread's copies of tile kt have landed
    __syncthreads();    // and everyone else's
    const u16* sK = smem + st * 2 * TILE * RS;
    const u16* sV = sK + TILE * RS;
${scorePair('s', 'qa', 'sK', 'dp', 'dya', 'sV')}
    const bool diag = kt == last;
#pragma unroll
    for (int j = 0; j < NT_T; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const int key = k0 + j * 8 + 2 * c + (e & 1);
        const bool lo = e < 2;
        float pv = prob2(s[j][e], scale_log2, lo ? lA : lB);
        if (diag && key > (lo ? rowA : rowB)) pv = 0.f;
        s[j][e] = pv * (dp[j][e] - (lo ? dA : dB));
      }
    mma_pv(dq, s, sK, lane);
    __syncthreads();  // stage st is refilled by the next iteration's prefetch
  }
  store_rows(dqkv + (long long)b * T * ld + (long long)h * HD, ld, dq, rowA, T, scale, scale, c);
}
`;
