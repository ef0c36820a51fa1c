/**
 * CUDA pieces shared by the norm group's programs (layernorm, softmax_xent, embedding, dropout):
 * 16-byte vector loads and stores of X_t (VEC elements at a time, chosen on the host when the row
 * length and every pointer allow it), warp sums, NaN and -inf in the compute type. All arithmetic is in
 * X_c (float for f32/f16/bf16, double for f64), stores round once.
 */
import type { DType } from '../../core/dtype.js';
import { bytesPerElement } from '../../core/dtype.js';
import type { CudaArg } from '../../devices/cuda/kernel-api.js';
import { MATH_OVERLOADS } from './cuda.js';

export const NORM_CUDA = `${MATH_OVERLOADS}
#ifndef VEC
#define VEC 1
#endif
#define NRM_NAN ((X_c)__int_as_float(0x7fc00000))
#define NRM_NEG_INF (-(X_c)__int_as_float(0x7f800000))
// VEC consecutive elements starting at p[i] (i a multiple of VEC, p + i 16-byte aligned when VEC > 1).
// No __restrict__ here: residual_layernorm reads back the s it has just written through these.
static __device__ __forceinline__ void nrm_ld(const X_t* p, long long i, X_c* v) {
#if VEC > 1
  union { uint4 u; X_t e[VEC]; } t;
  t.u = *reinterpret_cast<const uint4*>(p + i);
#pragma unroll
  for (int k = 0; k < VEC; k++) v[k] = ldX(t.e, k);
#else
  v[0] = ldX(p, i);
#endif
}
static __device__ __forceinline__ void nrm_st(X_t* p, long long i, const X_c* v) {
#if VEC > 1
  union { uint4 u; X_t e[VEC]; } t;
#pragma unroll
  for (int k = 0; k < VEC; k++) stX(t.e, k, v[k]);
  *reinterpret_cast<uint4*>(p + i) = t.u;
#else
  stX(p, i, v[0]);
#endif
}
// The value v has once stored as X_t (identity for f32/f64).
static __device__ __forceinline__ X_c nrm_round(X_c v) {
  X_t t;
  stX(&t, 0, v);
  return ldX(&t, 0);
}
static __device__ __forceinline__ X_c nrm_warp_sum(X_c v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
`;

/**
 * Elements per 16-byte vector when `cols` is a multiple of it and every pointer is 16-byte aligned
 * (rows then start aligned too); 1 otherwise.
 */
export function vectorWidth(dtype: DType, cols: number, args: readonly CudaArg[]): number {
  const vec = 16 / bytesPerElement(dtype);
  if (cols % vec !== 0) return 1;
  return args.every((a) => a.ptr % 16 === 0) ? vec : 1;
}
