import type { ReferenceFn } from '../common/reference.js';
import { enumScalar } from '../common/scalars.js';
import { ACT_OPS, actFn } from './ops.js';

export const activationReference: ReferenceFn = (args, scalars) => {
  const f = actFn(enumScalar('activation', scalars, 'op', ACT_OPS));
  return { y: args.x!.values.map(f) };
};
