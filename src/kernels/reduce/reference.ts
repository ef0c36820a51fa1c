import type { ReferenceFn } from '../common/reference.js';
import { reduceLayout } from './params.js';

export const reduceReference: ReferenceFn = (args, scalars) => {
  const { op, outer, len, inner } = reduceLayout(args.x!.desc.shape, scalars);
  const x = args.x!.values;
  const y = new Float64Array(outer * inner);
  for (let o = 0; o < outer; o++) {
    for (let i = 0; i < inner; i++) {
      let acc = op === 'max' ? -Infinity : 0;
      for (let j = 0; j < len; j++) {
        const v = x[(o * len + j) * inner + i]!;
        acc = op === 'max' ? Math.max(acc, v) : acc + v;
      }
      y[o * inner + i] = op === 'mean' ? acc / len : acc;
    }
  }
  return { y };
};
