import type { KernelDef } from '../kernel.js';
import { checkScalarNames } from '../common/scalars.js';
import { TandemError } from '../../core/errors.js';
import { shapeStr } from '../../core/shape.js';
import { checkArgNames, requireSameDType } from '../common/validate.js';
import { copyCost } from './cost.js';

/**
 * y = x, bit for bit; same dtype (any dtype) and element count. The shapes may differ: a copy into
 * another shape is a reshape (row-major order is kept), which the nn layer uses for views.
 */
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
    const { x, y } = args;
    if (x!.bytes !== y!.bytes)
      throw new TandemError(
        'TANDEM_ERR_SHAPE',
        `copy: x ${shapeStr(x!.shape)} and y ${shapeStr(y!.shape)} must have the same number of elements`,
        { op: 'copy', shapes: [x!.shape, y!.shape] },
      );
  },
  cost: copyCost,
};
