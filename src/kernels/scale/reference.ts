import type { ReferenceFn } from '../common/reference.js';
import { numberScalar } from '../common/scalars.js';

export const scaleReference: ReferenceFn = (args, scalars) => {
  const alpha = numberScalar('scale', scalars, 'alpha');
  return { x: args.x!.values.map((v) => alpha * v) };
};
