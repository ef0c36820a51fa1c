import type { KernelDef } from '../kernel.js';
import { checkScalarNames, numberScalar } from '../common/scalars.js';
import { checkArgNames, requireFloat, requireSameDType, requireSameShape } from '../common/validate.js';
import { axpyCost } from './cost.js';

/** y = alpha * x + y, element-wise over same-shape, same-dtype float tensors (alpha defaults to 1). */
export const axpyDef: KernelDef = {
  name: 'axpy',
  args: [
    { name: 'x', mode: 'r' },
    { name: 'y', mode: 'rw' },
  ],
  validate(args, scalars) {
    checkArgNames('axpy', axpyDef.args, args);
    checkScalarNames('axpy', scalars, ['alpha']);
    numberScalar('axpy', scalars, 'alpha', 1);
    requireFloat('axpy', 'x', args.x!);
    requireSameDType('axpy', ['x', 'y'], args);
    requireSameShape('axpy', ['x', 'y'], args);
  },
  cost: axpyCost,
};
