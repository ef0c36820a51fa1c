/**
 * The activations in CUDA C for Tandem programs (after the prelude binds X): the same tanh-form GELU
 * and relu′(0) = 0 as ops.ts, in f32 for f32/f16/bf16 storage and in f64 for f64. ACT selects the
 * activation at compile time: 0 = gelu, 1 = relu (the index in ACT_OPS).
 */
import { MATH_OVERLOADS } from '../common/cuda.js';
import { ACT_OPS, type ActOp, GELU_CUBIC, GELU_SCALE } from './ops.js';

export const ACT_SOURCE = `${MATH_OVERLOADS}
static __device__ __forceinline__ X_c tdm_act(X_c x) {
#if ACT == 0
  const X_c u = (X_c)${GELU_SCALE} * (x + (X_c)${GELU_CUBIC} * x * x * x);
  return (X_c)0.5 * x * ((X_c)1 + m_tanh(u));
#else
  return x < (X_c)0 ? (X_c)0 : x;
#endif
}
static __device__ __forceinline__ X_c tdm_act_grad(X_c x) {
#if ACT == 0
  const X_c t = m_tanh((X_c)${GELU_SCALE} * (x + (X_c)${GELU_CUBIC} * x * x * x));
  return (X_c)0.5 * ((X_c)1 + t)
      + (X_c)0.5 * x * ((X_c)1 - t * t) * (X_c)${GELU_SCALE} * ((X_c)1 + (X_c)3 * (X_c)${GELU_CUBIC} * x * x);
#else
  return x > (X_c)0 ? (X_c)1 : (X_c)0;
#endif
}
`;

export function actIndex(op: ActOp): number {
  return ACT_OPS.indexOf(op);
}
