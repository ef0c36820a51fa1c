/** The binary functions by name, in float64: the reference definition of each op. */
export const BINARY_OPS = ['add', 'sub', 'mul', 'div', 'max', 'min', 'pow'] as const;
export type BinaryOp = (typeof BINARY_OPS)[number];

export const BINARY_FUNCS: Readonly<Record<BinaryOp, (a: number, b: number) => number>> = {
  add: (a, b) => a + b,
  sub: (a, b) => a - b,
  mul: (a, b) => a * b,
  div: (a, b) => a / b,
  // Math.max/min propagate NaN; conformance cases use NaN-free inputs because GPU max/min may not.
  max: Math.max,
  min: Math.min,
  pow: Math.pow,
};
