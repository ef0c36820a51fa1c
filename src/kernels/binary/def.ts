import type { KernelDef } from '../kernel.js';
import { checkScalarNames, enumScalar } from '../common/scalars.js';
import { checkArgNames, requireFloat, requireSameDType, requireSameShape } from '../common/validate.js';
import { binaryCost } from './cost.js';
import { BINARY_OPS } from './ops.js';

/** c = a (op) b element-wise; a, b and c share one shape and one float dtype (no broadcasting in v1). */
export const binaryDef: KernelDef = {
  name: 'binary',
  args: [
    { name: 'a', mode: 'r' },
    { name: 'b', mode: 'r' },
    { name: 'c', mode: 'w' },
  ],
  validate(args, scalars) {
    checkArgNames('binary', binaryDef.args, args);
    checkScalarNames('binary', scalars, ['op']);
    enumScalar('binary', scalars, 'op', BINARY_OPS);
    requireFloat('binary', 'a', args.a!);
    requireSameDType('binary', ['a', 'b', 'c'], args);
    requireSameShape('binary', ['a', 'b', 'c'], args);
  },
  cost: binaryCost,
};
