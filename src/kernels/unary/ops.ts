/** The unary functions by name, in float64: the reference definition of each op. */
export const UNARY_OPS = [
  'neg',
  'abs',
  'exp',
  'log',
  'sqrt',
  'relu',
  'tanh',
  'sigmoid',
  'sin',
  'cos',
  'square',
  'recip',
] as const;
export type UnaryOp = (typeof UNARY_OPS)[number];

export const UNARY_FUNCS: Readonly<Record<UnaryOp, (x: number) => number>> = {
  neg: (x) => -x,
  abs: Math.abs,
  exp: Math.exp,
  log: Math.log,
  sqrt: Math.sqrt,
  // x < 0 (not x > 0) so that NaN propagates instead of becoming 0.
  relu: (x) => (x < 0 ? 0 : x),
  tanh: Math.tanh,
  sigmoid: (x) => 1 / (1 + Math.exp(-x)),
  sin: Math.sin,
  cos: Math.cos,
  square: (x) => x * x,
  recip: (x) => 1 / x,
};

/** Rough flops per element for the roofline model: transcendental functions cost a polynomial. */
export const UNARY_FLOPS: Readonly<Record<UnaryOp, number>> = {
  neg: 1,
  abs: 1,
  relu: 1,
  square: 1,
  recip: 4,
  sqrt: 4,
  exp: 16,
  log: 16,
  tanh: 16,
  sigmoid: 20,
  sin: 16,
  cos: 16,
};
