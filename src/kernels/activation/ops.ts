/**
 * The activations of the deep-learning ops (docs/deep-learning-ops.md): GELU in PyTorch's tanh form
 * (`approximate='tanh'`) and ReLU with relu′(0) = 0. Shared by the references (float64), the CPU
 * kernels and the GPU sources, which spell the same constants.
 */
import type { FloatArray } from '../common/cpu-float.js';

export const ACT_OPS = ['gelu', 'relu'] as const;
export type ActOp = (typeof ACT_OPS)[number];

/** √(2/π) and the cubic coefficient of the tanh approximation. */
export const GELU_SCALE = Math.sqrt(2 / Math.PI);
export const GELU_CUBIC = 0.044715;

export function gelu(x: number): number {
  return 0.5 * x * (1 + Math.tanh(GELU_SCALE * (x + GELU_CUBIC * x * x * x)));
}

/** d/dx of gelu: ½(1 + t) + ½x(1 − t²)·√(2/π)(1 + 3·0.044715x²), t = tanh(√(2/π)(x + 0.044715x³)). */
export function geluGrad(x: number): number {
  const t = Math.tanh(GELU_SCALE * (x + GELU_CUBIC * x * x * x));
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * GELU_SCALE * (1 + 3 * GELU_CUBIC * x * x);
}

/** NaN stays NaN (as the `unary` relu). */
export function relu(x: number): number {
  return x < 0 ? 0 : x;
}

/** relu′(0) = 0, as PyTorch's threshold_backward. */
export function reluGrad(x: number): number {
  return x > 0 ? 1 : 0;
}

export function actFn(op: ActOp): (x: number) => number {
  return op === 'gelu' ? gelu : relu;
}

export function actGrad(op: ActOp): (x: number) => number {
  return op === 'gelu' ? geluGrad : reluGrad;
}

/** dst[i] = op(src[i]) for i < n (dst may be src). */
export function applyAct(op: ActOp, src: FloatArray, dst: FloatArray, n: number): void {
  if (op === 'relu') {
    for (let i = 0; i < n; i++) dst[i] = src[i]! < 0 ? 0 : src[i]!;
    return;
  }
  for (let i = 0; i < n; i++) dst[i] = gelu(src[i]!);
}

/**
 * dst[i] = op′(pre[i])·g[i] (+ dst[i] when `accumulate`) for i < n; dst may be g. The relu loop is
 * separate so the common case does no tanh.
 */
export function applyActGrad(
  op: ActOp,
  pre: FloatArray,
  g: FloatArray,
  dst: FloatArray,
  n: number,
  accumulate: boolean,
): void {
  if (op === 'relu') {
    if (accumulate) for (let i = 0; i < n; i++) dst[i] = (pre[i]! > 0 ? g[i]! : 0) + dst[i]!;
    else for (let i = 0; i < n; i++) dst[i] = pre[i]! > 0 ? g[i]! : 0;
    return;
  }
  if (accumulate) for (let i = 0; i < n; i++) dst[i] = geluGrad(pre[i]!) * g[i]! + dst[i]!;
  else for (let i = 0; i < n; i++) dst[i] = geluGrad(pre[i]!) * g[i]!;
}
