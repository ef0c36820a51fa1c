/**
 * The unary element-wise operators onnx_unary (or the core `unary`) runs: each op's kernel op, its
 * scalars from the node's attributes, and its float64 function for the host evaluation.
 */
import { roundHalfEven } from '../../kernels/onnx/elementwise-ops.js';
import { fail } from './util.js';
import type { OpCall } from './types.js';

export type Scalars = Record<string, number | string | boolean>;

function erf(x: number): number {
  // Abramowitz–Stegun 7.1.26 is only 1e-7 accurate; use the series/continued fraction for f64 accuracy.
  const ax = Math.abs(x);
  if (ax < 3) {
    let sum = x;
    let term = x;
    const x2 = x * x;
    for (let n = 1; n < 200; n++) {
      term *= -x2 / n;
      const add = term / (2 * n + 1);
      sum += add;
      if (Math.abs(add) < 1e-17 * Math.abs(sum)) break;
    }
    return (2 / Math.sqrt(Math.PI)) * sum;
  }
  // erfc continued fraction (Lentz) for large |x|.
  let f = ax;
  for (let k = 60; k >= 1; k--) f = ax + k / 2 / f;
  const erfc = Math.exp(-ax * ax) / Math.sqrt(Math.PI) / f;
  return x > 0 ? 1 - erfc : erfc - 1;
}

export interface UnarySpec {
  readonly kernelOp: string;
  /** The runtime kernel: onnx_unary, or the core `unary` (sin, cos) for ops onnx_unary has not. */
  readonly kernel?: 'unary';
  scalars(c: OpCall): Scalars;
  f(c: OpCall): (x: number) => number;
}

const plain = (kernelOp: string, f: (x: number) => number): UnarySpec => ({
  kernelOp,
  scalars: () => ({}),
  f: () => f,
});

export const UNARY: Record<string, UnarySpec> = {
  Relu: plain('relu', (x) => (x < 0 ? 0 : x)),
  Sigmoid: plain('sigmoid', (x) => 1 / (1 + Math.exp(-x))),
  Tanh: plain('tanh', Math.tanh),
  Sqrt: plain('sqrt', Math.sqrt),
  Exp: plain('exp', Math.exp),
  Log: plain('log', Math.log),
  Neg: plain('neg', (x) => -x),
  Abs: plain('abs', Math.abs),
  Reciprocal: plain('reciprocal', (x) => 1 / x),
  Erf: plain('erf', erf),
  Softplus: plain('softplus', (x) => Math.log1p(Math.exp(x))),
  Round: plain('round', roundHalfEven),
  Acosh: plain('acosh', Math.acosh),
  Asinh: plain('asinh', Math.asinh),
  Atanh: plain('atanh', Math.atanh),
  Cosh: plain('cosh', Math.cosh),
  Sinh: plain('sinh', Math.sinh),
  Identity: plain('identity', (x) => x),
  Sin: { ...plain('sin', Math.sin), kernel: 'unary' },
  Cos: { ...plain('cos', Math.cos), kernel: 'unary' },
  Dropout: plain('identity', (x) => x),
  HardSwish: plain('hard_swish', (x) => x * Math.max(0, Math.min(1, x / 6 + 0.5))),
  LeakyRelu: {
    kernelOp: 'leaky_relu',
    scalars: (c) => ({ alpha: c.attrs.float('alpha', 0.01) }),
    f: (c) => {
      const a = c.attrs.float('alpha', 0.01);
      return (x) => (x >= 0 ? x : a * x);
    },
  },
  Elu: {
    kernelOp: 'elu',
    scalars: (c) => ({ alpha: c.attrs.float('alpha', 1) }),
    f: (c) => {
      const a = c.attrs.float('alpha', 1);
      return (x) => (x >= 0 ? x : a * (Math.exp(x) - 1));
    },
  },
  ThresholdedRelu: {
    kernelOp: 'thresholded_relu',
    scalars: (c) => ({ alpha: c.attrs.float('alpha', 1) }),
    f: (c) => {
      const a = c.attrs.float('alpha', 1);
      return (x) => (x > a ? x : 0);
    },
  },
  Shrink: {
    kernelOp: 'shrink',
    scalars: (c) => ({ alpha: c.attrs.float('lambd', 0.5), beta: c.attrs.float('bias', 0) }),
    f: (c) => {
      const [l, b] = [c.attrs.float('lambd', 0.5), c.attrs.float('bias', 0)];
      return (x) => (x < -l ? x + b : x > l ? x - b : 0);
    },
  },
  HardSigmoid: {
    kernelOp: 'hard_sigmoid',
    scalars: (c) => ({ alpha: c.attrs.float('alpha', 0.2), beta: c.attrs.float('beta', 0.5) }),
    f: (c) => {
      const a = c.attrs.float('alpha', 0.2);
      const b = c.attrs.float('beta', 0.5);
      return (x) => Math.max(0, Math.min(1, a * x + b));
    },
  },
  Gelu: {
    kernelOp: 'gelu',
    scalars: () => ({}),
    f: (c) =>
      c.attrs.string('approximate', 'none') === 'tanh'
        ? (x) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x)))
        : (x) => 0.5 * x * (1 + erf(x / Math.SQRT2)),
  },
  Clip: {
    kernelOp: 'clip',
    scalars: (c) => {
      const [lo, hi] = clipBounds(c);
      return { ...(lo > -Infinity ? { min: lo } : {}), ...(hi < Infinity ? { max: hi } : {}) };
    },
    f: (c) => {
      const [lo, hi] = clipBounds(c);
      return (x) => (x !== x ? x : Math.min(Math.max(x, lo), hi));
    },
  },
};

/** Clip's bounds: attributes before opset 11, optional constant inputs from 11. */
export function clipBounds(c: OpCall): [number, number] {
  if (c.opset < 11) return [c.attrs.float('min', -Infinity), c.attrs.float('max', Infinity)];
  const bound = (i: number, dflt: number): number => {
    const v = c.inputs[i];
    if (!v) return dflt;
    if (!v.host)
      throw fail(c, `Clip's ${i === 1 ? 'min' : 'max'} must be a constant`, 'TANDEM_ERR_UNSUPPORTED');
    return v.host.data[0]!;
  };
  return [bound(1, -Infinity), bound(2, Infinity)];
}
