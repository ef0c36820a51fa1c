import type { KernelDef } from '../kernel.js';
import { checkScalarNames } from '../common/scalars.js';
import { checkArgNames } from '../common/validate.js';
import { noopCost } from './cost.js';

/** Does nothing: tasks of it measure the runtime's own overhead (submit, schedule, complete). */
export const noopDef: KernelDef = {
  name: 'noop',
  args: [],
  validate(args, scalars) {
    checkArgNames('noop', noopDef.args, args);
    checkScalarNames('noop', scalars, []);
  },
  cost: noopCost,
};
