import type { ReferenceFn } from '../common/reference.js';
import { enumScalar } from '../common/scalars.js';
import { BINARY_FUNCS, BINARY_OPS } from './ops.js';

export const binaryReference: ReferenceFn = (args, scalars) => {
  const f = BINARY_FUNCS[enumScalar('binary', scalars, 'op', BINARY_OPS)];
  const b = args.b!.values;
  return { c: args.a!.values.map((v, i) => f(v, b[i]!)) };
};
