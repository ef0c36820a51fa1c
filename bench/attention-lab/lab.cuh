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
// dst[0] += a, dst[1] += b in global memory (8-byte aligned), one vector reduction (sm_90: red.v2.f32).
// (PTX ISA 8.1, CUDA 12.1; two scalar reductions with an older nvcc.)
static __device__ __forceinline__ void red_add_v2(float* dst, float a, float b) {
#if __CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 1)
  asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" :: "l"(dst), "f"(a), "f"(b) : "memory");
#else
  asm volatile("red.global.add.f32 [%0], %1;" :: "l"(dst), "f"(a) : "memory");
  asm volatile("red.global.add.f32 [%0], %1;" :: "l"(dst + 1), "f"(b) : "memory");
#endif
}
// The low / high 16-bit value of a packed pair as f32.
#if IS_BF16
static __device__ __forceinline__ float h2f_lo(unsigned v) { return __uint_as_float(v << 16); }
static __device__ __forceinline__ float h2f_hi(unsigned v) { return __uint_as_float(v & 0xffff0000u); }
#else
static __device__ __forceinline__ float h2f_lo(unsigned v) {
  float f;
  asm("{ .reg .b16 l, h; mov.b32 {l, h}, %1; cvt.f32.f16 %0, l; }" : "=f"(f) : "r"(v));
  return f;
}
static __device__ __forceinline__ float h2f_hi(unsigned v) {
  float f;
  asm("{ .reg .b16 l, h; mov.b32 {l, h}, %1; cvt.f32.f16 %0, h; }" : "=f"(f) : "r"(v));
  return f;
}
#endif
