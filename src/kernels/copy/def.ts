import type { KernelDef } from '../kernel.js';
import { checkScalarNames } from '../common/scalars.js';
import { checkArgNames, requireSameDType, requireSameShape } from '../common/validate.js';
import { copyCost } from './cost.js';

/** y = x, bit for bit; same shape, same dtype (any dtype). */
export const copyDef: KernelDef = {
  name: 'copy',
  args: [
    { name: 'x', mode: 'r' },
    { name: 'y', mode: 'w' },
  ],
  validate(args, scalars) {
    checkArgNames('copy', copyDef.args, args);
    checkScalarNames('copy', scalars, []);
    requireSameDType('copy', ['x', 'y'], args);
    requireSameShape('copy', ['x', 'y'], args);
  },
  cost: copyCost,
};
