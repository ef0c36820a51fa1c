import type { ReferenceFn } from '../common/reference.js';
import { enumScalar } from '../common/scalars.js';
import { UNARY_FUNCS, UNARY_OPS } from './ops.js';

export const unaryReference: ReferenceFn = (args, scalars) => {
  const f = UNARY_FUNCS[enumScalar('unary', scalars, 'op', UNARY_OPS)];
  return { y: args.x!.values.map(f) };
};
