import { numel } from '../../core/shape.js';
import { bytesPerElement } from '../../core/dtype.js';
import type { KernelDef } from '../kernel.js';
import { checkScalarNames, enumScalar } from '../common/scalars.js';
import { checkArgNames, requireFloat, requireSameDType, requireSameShape } from '../common/validate.js';
import { ACT_OPS } from '../activation/ops.js';
import { accumulateOf } from '../linear_dw/def.js';

/** dx (+)= op′(x) ⊙ dy element-wise; x, dy, dx share shape and float dtype. */
export const activationBackwardDef: KernelDef = {
  name: 'activation_backward',
  args: [
    { name: 'x', mode: 'r' },
    { name: 'dy', mode: 'r' },
    { name: 'dx', mode: 'rw' },
  ],
  modes: (scalars) => ({ dx: scalars.accumulate === true ? 'rw' : 'w' }),
  validate(args, scalars) {
    checkArgNames('activation_backward', activationBackwardDef.args, args);
    checkScalarNames('activation_backward', scalars, ['op', 'accumulate']);
    enumScalar('activation_backward', scalars, 'op', ACT_OPS);
    accumulateOf('activation_backward', scalars);
    requireFloat('activation_backward', 'x', args.x!);
    requireSameDType('activation_backward', ['x', 'dy', 'dx'], args);
    requireSameShape('activation_backward', ['x', 'dy', 'dx'], args);
  },
  cost(args, scalars) {
    const n = numel(args.x!.shape);
    const moved = scalars.accumulate === true ? 4 : 3;
    return { flops: 12 * n, bytes: moved * n * bytesPerElement(args.x!.dtype) };
  },
};
