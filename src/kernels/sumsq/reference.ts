import type { ReferenceFn } from '../common/reference.js';

export const sumsqReference: ReferenceFn = (args) => {
  let sum = 0;
  for (const v of args.x!.values) sum += v * v;
  return { acc: Float64Array.of(args.acc!.values[0]! + sum) };
};
