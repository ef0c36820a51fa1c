import { numel } from '../../core/shape.js';
import { bytesPerElement } from '../../core/dtype.js';
import type { KernelDef } from '../kernel.js';
import { checkScalarNames, enumScalar } from '../common/scalars.js';
import { checkArgNames, requireFloat, requireSameDType, requireSameShape } from '../common/validate.js';
import { ACT_OPS } from './ops.js';

/** y = op(x) element-wise, op 'gelu' (tanh form) or 'relu'; x and y share shape and float dtype. */
export const activationDef: KernelDef = {
  name: 'activation',
  args: [
    { name: 'x', mode: 'r' },
    { name: 'y', mode: 'w' },
  ],
  validate(args, scalars) {
    checkArgNames('activation', activationDef.args, args);
    checkScalarNames('activation', scalars, ['op']);
    enumScalar('activation', scalars, 'op', ACT_OPS);
    requireFloat('activation', 'x', args.x!);
    requireSameDType('activation', ['x', 'y'], args);
    requireSameShape('activation', ['x', 'y'], args);
  },
  cost(args) {
    const n = numel(args.x!.shape);
    return { flops: 8 * n, bytes: 2 * n * bytesPerElement(args.x!.dtype) };
  },
};
