// Host versions of lab.cuh's inline-PTX helpers for emu-check.py (beside test/kernels/cuda-emu/emu.h,
// which has mma, ldmatrix.trans, pack2 and cp.async).
#pragma once
#define __align__(n) alignas(n)
#undef __launch_bounds__
#define __launch_bounds__(...)
// ldmatrix.sync.aligned.m8n8.x4.shared.b16: lane l names row l%8 of matrix l/8; r[i] = matrix i in
// the fragment order: low half M_i[g][2c], high half M_i[g][2c+1].
static inline void ldsm_x4(unsigned* r, const unsigned short* p) {
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  if (((uintptr_t)p) & 15) { fprintf(stderr, "ldmatrix row address not 16-byte aligned\n"); exit(3); }
  g_ldsm[w][lane] = p; warp_bar();
  int g = lane >> 2, c = lane & 3;
  for (int i = 0; i < 4; i++) {
    unsigned lo = g_ldsm[w][i * 8 + g][2 * c], hi = g_ldsm[w][i * 8 + g][2 * c + 1];
    r[i] = lo | (hi << 16);
  }
  warp_bar();
}
static inline float ex2(float x) { return exp2f(x); }
static inline void cp_async_wait_0() {}
static inline void red_add_v2(float* dst, float a, float b) {
  std::lock_guard<std::mutex> g(g_atomic);
  dst[0] += a;
  dst[1] += b;
}
struct alignas(16) float4 { float x, y, z, w; };
static inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
