/**
 * The element-wise functions of onnx_binary and onnx_unary: one float64 JS function per op (used by
 * the reference and, in the working precision, by the CPU kernels) and one CUDA expression over `v`
 * (unary) or `p`, `q` (binary) in the compute type X_c, with scalars ALPHA, BETA, LO, HI.
 */
import type { Scalars } from '../../devices/device.js';
import { enumScalar, numberScalar } from '../common/scalars.js';

export const BINARY_OPS = ['add', 'sub', 'mul', 'div', 'pow', 'max', 'min'] as const;
export type BinaryOp = (typeof BINARY_OPS)[number];

/** NaN-propagating max/min (numpy's maximum/minimum, ONNX Runtime's Max/Min). */
function nanMax(a: number, b: number): number {
  return a !== a || b !== b ? NaN : a > b ? a : b;
}
function nanMin(a: number, b: number): number {
  return a !== a || b !== b ? NaN : a < b ? a : b;
}

export const BINARY_FUNCS: Record<BinaryOp, (a: number, b: number) => number> = {
  add: (a, b) => a + b,
  sub: (a, b) => a - b,
  mul: (a, b) => a * b,
  div: (a, b) => a / b,
  pow: (a, b) => Math.pow(a, b),
  max: nanMax,
  min: nanMin,
};

export const BINARY_CUDA: Record<BinaryOp, string> = {
  add: 'p + q',
  sub: 'p - q',
  mul: 'p * q',
  div: 'p / q',
  pow: 'm_pow(p, q)',
  max: '(p != p || q != q) ? p + q : (p > q ? p : q)',
  min: '(p != p || q != q) ? p + q : (p < q ? p : q)',
};

export const UNARY_OPS = [
  'relu',
  'leaky_relu',
  'sigmoid',
  'hard_sigmoid',
  'hard_swish',
  'tanh',
  'sqrt',
  'exp',
  'log',
  'neg',
  'abs',
  'reciprocal',
  'erf',
  'gelu',
  'gelu_tanh',
  'clip',
  'softplus',
  'elu',
  'identity',
  'round',
  'thresholded_relu',
  'acosh',
  'asinh',
  'atanh',
  'cosh',
  'sinh',
  'floor',
  'ceil',
  'sign',
  'shrink',
] as const;
export type UnaryOp = (typeof UNARY_OPS)[number];

export interface UnaryParams {
  readonly op: UnaryOp;
  readonly alpha: number;
  readonly beta: number;
  readonly min: number;
  readonly max: number;
}

const DEFAULT_ALPHA: Partial<Record<UnaryOp, number>> = {
  leaky_relu: 0.01,
  hard_sigmoid: 0.2,
  elu: 1,
  thresholded_relu: 1,
  shrink: 0.5,
};

export function unaryParams(scalars: Scalars): UnaryParams {
  const op = enumScalar('onnx_unary', scalars, 'op', UNARY_OPS);
  const alpha = numberScalar('onnx_unary', scalars, 'alpha', DEFAULT_ALPHA[op] ?? 0);
  const beta = numberScalar('onnx_unary', scalars, 'beta', op === 'hard_sigmoid' ? 0.5 : 0);
  const min = numberScalar('onnx_unary', scalars, 'min', -Number.MAX_VALUE);
  const max = numberScalar('onnx_unary', scalars, 'max', Number.MAX_VALUE);
  return { op, alpha, beta, min, max };
}

/** Scalars of an activation fused into another op (onnx_conv, onnx_conv_transpose). */
export const ACTIVATION_SCALARS = [
  'activation',
  'activationAlpha',
  'activationBeta',
  'activationMin',
  'activationMax',
];

/** A fused activation's parameters: onnx_unary's, under ACTIVATION_SCALARS' names ('identity' by default). */
export function activationParams(scalars: Scalars): UnaryParams {
  const renamed: Record<string, string | number | boolean> = { op: scalars['activation'] ?? 'identity' };
  for (const [from, to] of [
    ['activationAlpha', 'alpha'],
    ['activationBeta', 'beta'],
    ['activationMin', 'min'],
    ['activationMax', 'max'],
  ] as const) {
    const v = scalars[from];
    if (v !== undefined) renamed[to] = v;
  }
  return unaryParams(renamed);
}

/**
 * erf to about 1e-15 relative: its Maclaurin series below 2.5 (alternating terms, at most e^6.25 in
 * size, so a few digits of cancellation at worst), the continued fraction of erfc above.
 */
export function erf(x: number): number {
  if (x !== x) return NaN;
  const ax = Math.abs(x);
  if (ax < 2.5) {
    let term = ax;
    let sum = ax;
    const x2 = ax * ax;
    for (let n = 1; n < 200; n++) {
      term *= -x2 / n;
      const add = term / (2 * n + 1);
      sum += add;
      if (Math.abs(add) < 1e-17 * Math.abs(sum)) break;
    }
    const r = (2 / Math.sqrt(Math.PI)) * sum;
    return x < 0 ? -r : r;
  }
  if (ax > 6) return x < 0 ? -1 : 1;
  // erfc(x) = e^(−x²)/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + …)))), evaluated from the tail.
  let frac = ax;
  for (let k = 60; k >= 1; k--) frac = ax + k / 2 / frac;
  const erfc = Math.exp(-ax * ax) / Math.sqrt(Math.PI) / frac;
  return x < 0 ? erfc - 1 : 1 - erfc;
}

const SQRT_2_OVER_PI = Math.sqrt(2 / Math.PI);

/** Round half to even (ONNX Round, numpy.round, CUDA's rint); −0 and non-finite values kept. */
export function roundHalfEven(x: number): number {
  return Math.abs(x % 1) === 0.5 ? 2 * Math.round(x / 2) : Math.round(x);
}

export function unaryFunc(p: UnaryParams): (x: number) => number {
  const { alpha, beta, min, max } = p;
  switch (p.op) {
    case 'relu':
      return (x) => (x < 0 ? 0 : x);
    case 'leaky_relu':
      return (x) => (x < 0 ? alpha * x : x);
    case 'sigmoid':
      return (x) => 1 / (1 + Math.exp(-x));
    case 'hard_sigmoid':
      return (x) => nanMax(0, nanMin(1, alpha * x + beta));
    case 'hard_swish':
      return (x) => x * nanMax(0, nanMin(1, x / 6 + 0.5));
    case 'tanh':
      return Math.tanh;
    case 'sqrt':
      return Math.sqrt;
    case 'exp':
      return Math.exp;
    case 'log':
      return Math.log;
    case 'neg':
      return (x) => -x;
    case 'abs':
      return Math.abs;
    case 'reciprocal':
      return (x) => 1 / x;
    case 'erf':
      return erf;
    case 'gelu':
      return (x) => 0.5 * x * (1 + erf(x / Math.SQRT2));
    case 'gelu_tanh':
      return (x) => 0.5 * x * (1 + Math.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)));
    case 'clip':
      return (x) => (x !== x ? x : x < min ? min : x > max ? max : x);
    case 'softplus':
      return (x) => (x > 30 ? x : Math.log1p(Math.exp(x)));
    case 'elu':
      return (x) => (x < 0 ? alpha * Math.expm1(x) : x);
    case 'identity':
      return (x) => x;
    case 'round':
      return roundHalfEven;
    case 'thresholded_relu':
      return (x) => (x > alpha ? x : 0);
    case 'acosh':
      return Math.acosh;
    case 'asinh':
      return Math.asinh;
    case 'atanh':
      return Math.atanh;
    case 'cosh':
      return Math.cosh;
    case 'sinh':
      return Math.sinh;
    case 'floor':
      return Math.floor;
    case 'ceil':
      return Math.ceil;
    case 'sign':
      return Math.sign;
    case 'shrink':
      return (x) => (x < -alpha ? x + beta : x > alpha ? x - beta : 0);
  }
}

/** CUDA expression of each unary op over `v` (X_c); min/max of clip are LO/HI. */
export const UNARY_CUDA: Record<UnaryOp, string> = {
  relu: 'v < (X_c)0 ? (X_c)0 : v',
  leaky_relu: 'v < (X_c)0 ? (X_c)ALPHA * v : v',
  sigmoid: '(X_c)1 / ((X_c)1 + m_exp(-v))',
  hard_sigmoid: 'm_clamp01((X_c)ALPHA * v + (X_c)BETA)',
  hard_swish: 'v * m_clamp01(v / (X_c)6 + (X_c)0.5)',
  tanh: 'm_tanh(v)',
  sqrt: 'm_sqrt(v)',
  exp: 'm_exp(v)',
  log: 'm_log(v)',
  neg: '-v',
  abs: 'm_abs(v)',
  reciprocal: '(X_c)1 / v',
  erf: 'm_erf(v)',
  gelu: '(X_c)0.5 * v * ((X_c)1 + m_erf(v * (X_c)0.70710678118654752440))',
  gelu_tanh:
    '(X_c)0.5 * v * ((X_c)1 + m_tanh((X_c)0.79788456080286535588 * (v + (X_c)0.044715 * v * v * v)))',
  clip: 'v != v ? v : (v < (X_c)LO ? (X_c)LO : (v > (X_c)HI ? (X_c)HI : v))',
  softplus: 'v > (X_c)30 ? v : m_log1p(m_exp(v))',
  elu: 'v < (X_c)0 ? (X_c)ALPHA * m_expm1(v) : v',
  identity: 'v',
  round: 'm_rint(v)',
  thresholded_relu: 'v > (X_c)ALPHA ? v : (X_c)0',
  acosh: 'm_acosh(v)',
  asinh: 'm_asinh(v)',
  atanh: 'm_atanh(v)',
  cosh: 'm_cosh(v)',
  sinh: 'm_sinh(v)',
  floor: 'm_floor(v)',
  ceil: 'm_ceil(v)',
  sign: 'v != v ? v : (v > (X_c)0 ? (X_c)1 : (v < (X_c)0 ? (X_c)-1 : v))',
  shrink: 'v < -(X_c)ALPHA ? v + (X_c)BETA : (v > (X_c)ALPHA ? v - (X_c)BETA : (X_c)0)',
};

/** CUDA: `X_c r = f(v)` for the op selected by the define OP (each op's expression). */
export const UNARY_CUDA_CASES = `${UNARY_OPS.map(
  (op, i) => `#${i === 0 ? 'if' : 'elif'} OP == ${i}\n    X_c r = ${UNARY_CUDA[op]};`,
).join('\n')}\n#endif`;

/** Helpers the unary expressions use beyond common/cuda.ts's MATH_OVERLOADS. */
export const UNARY_CUDA_HELPERS = `
static __device__ __forceinline__ float m_erf(float v) { return erff(v); }
static __device__ __forceinline__ double m_erf(double v) { return erf(v); }
static __device__ __forceinline__ float m_log1p(float v) { return log1pf(v); }
static __device__ __forceinline__ double m_log1p(double v) { return log1p(v); }
static __device__ __forceinline__ float m_expm1(float v) { return expm1f(v); }
static __device__ __forceinline__ double m_expm1(double v) { return expm1(v); }
static __device__ __forceinline__ float m_rint(float v) { return rintf(v); }
static __device__ __forceinline__ double m_rint(double v) { return rint(v); }
static __device__ __forceinline__ float m_acosh(float v) { return acoshf(v); }
static __device__ __forceinline__ double m_acosh(double v) { return acosh(v); }
static __device__ __forceinline__ float m_asinh(float v) { return asinhf(v); }
static __device__ __forceinline__ double m_asinh(double v) { return asinh(v); }
static __device__ __forceinline__ float m_atanh(float v) { return atanhf(v); }
static __device__ __forceinline__ double m_atanh(double v) { return atanh(v); }
static __device__ __forceinline__ float m_cosh(float v) { return coshf(v); }
static __device__ __forceinline__ double m_cosh(double v) { return cosh(v); }
static __device__ __forceinline__ float m_sinh(float v) { return sinhf(v); }
static __device__ __forceinline__ double m_sinh(double v) { return sinh(v); }
static __device__ __forceinline__ float m_floor(float v) { return floorf(v); }
static __device__ __forceinline__ double m_floor(double v) { return floor(v); }
static __device__ __forceinline__ float m_ceil(float v) { return ceilf(v); }
static __device__ __forceinline__ double m_ceil(double v) { return ceil(v); }
template <typename T> static __device__ __forceinline__ T m_clamp01(T v) { return v != v ? v : (v < (T)0 ? (T)0 : (v > (T)1 ? (T)1 : v)); }
`;
