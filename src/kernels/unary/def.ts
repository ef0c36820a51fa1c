import type { KernelDef } from '../kernel.js';
import { checkScalarNames, enumScalar } from '../common/scalars.js';
import { checkArgNames, requireFloat, requireSameDType, requireSameShape } from '../common/validate.js';
import { unaryCost } from './cost.js';
import { UNARY_OPS } from './ops.js';

/** y = f(x) element-wise; x and y share shape and float dtype; scalar op names f. */
export const unaryDef: KernelDef = {
  name: 'unary',
  args: [
    { name: 'x', mode: 'r' },
    { name: 'y', mode: 'w' },
  ],
  validate(args, scalars) {
    checkArgNames('unary', unaryDef.args, args);
    checkScalarNames('unary', scalars, ['op']);
    enumScalar('unary', scalars, 'op', UNARY_OPS);
    requireFloat('unary', 'x', args.x!);
    requireSameDType('unary', ['x', 'y'], args);
    requireSameShape('unary', ['x', 'y'], args);
  },
  cost: unaryCost,
};
