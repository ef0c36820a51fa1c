import type { ReferenceFn } from '../common/reference.js';
import { numberScalar } from '../common/scalars.js';

export const axpyReference: ReferenceFn = (args, scalars) => {
  const alpha = numberScalar('axpy', scalars, 'alpha', 1);
  const x = args.x!.values;
  const y = args.y!.values;
  return { y: x.map((v, i) => alpha * v + y[i]!) };
};
