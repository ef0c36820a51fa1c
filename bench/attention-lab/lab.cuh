#pragma once
#include "common.cuh"
// ldsm_x4 and ex2 come from common.cuh (Tandem's kernels have them since the v1 port, ATTN_V1).
// acc[j] += A · Bᵀ over a 64-row tile s (row-major [TILE][RS]) with the B fragments from ldmatrix.x4:
// matrices (rows j*8.., cols kk*16), (.., kk*16+8), (.., kk*16+16), (.., kk*16+24).
static __device__ __forceinline__ void mma_abt_ldsm(float (*acc)[4], unsigned (*a)[4], const u16* s, int lane) {
  const int lr = lane & 7, lm = lane >> 3;
#pragma unroll
  for (int j = 0; j < NT_T; j++)
#pragma unroll
    for (int kk = 0; kk < KS_D; kk += 2) {
      unsigned kb[4];
      ldsm_x4(kb, s + (j * 8 + lr) * RS + kk * 16 + lm * 8);
      mma(acc[j], a[kk], kb[0], kb[1]);
      mma(acc[j], a[kk + 1], kb[2], kb[3]);
    }
}
// Waits until none of this thread's cp.async groups is in flight.
static __device__ __forceinline__ void cp_async_wait_0() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }
// red_add_v2, h2f_lo and h2f_hi come from common.cuh too (Tandem's single-pass backward uses them).
