// Host versions of lab.cuh's inline-PTX helpers for emu-check.py (beside test/kernels/cuda-emu/emu.h,
// which has mma, ldmatrix (plain and .trans), ex2, pack2 and cp.async).
#pragma once
#define __align__(n) alignas(n)
#undef __launch_bounds__
#define __launch_bounds__(...)
static inline void cp_async_wait_0() {}
static inline void red_add_v2(float* dst, float a, float b) {
  std::lock_guard<std::mutex> g(g_atomic);
  dst[0] += a;
  dst[1] += b;
}
struct alignas(16) float4 { float x, y, z, w; };
static inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
