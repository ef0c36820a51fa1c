// Host versions of lab.cuh's inline-PTX helpers for emu-check.py (beside test/kernels/cuda-emu/emu.h,
// which has mma, ldmatrix (plain and .trans), ex2, red.add.v2, the 16-bit unpacks, pack2 and cp.async).
#pragma once
#define __align__(n) alignas(n)
static inline void cp_async_wait_0() {}
struct alignas(16) float4 { float x, y, z, w; };
static inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
