import type { KernelDef } from '../kernel.js';
import { checkScalarNames, numberScalar } from '../common/scalars.js';
import { checkArgNames, requireFloat } from '../common/validate.js';
import { scaleCost } from './cost.js';

/** x = alpha * x in place (alpha is required: scaling by a default would hide a missing argument). */
export const scaleDef: KernelDef = {
  name: 'scale',
  args: [{ name: 'x', mode: 'rw' }],
  validate(args, scalars) {
    checkArgNames('scale', scaleDef.args, args);
    checkScalarNames('scale', scalars, ['alpha']);
    numberScalar('scale', scalars, 'alpha');
    requireFloat('scale', 'x', args.x!);
  },
  cost: scaleCost,
};
