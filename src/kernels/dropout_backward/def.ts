/** dropout_backward: dx (+)= keep ? dy/(1 − p) : 0, the mask recomputed from (p, seed, offset). */
import { bytesPerElement } from '../../core/dtype.js';
import { numel } from '../../core/shape.js';
import type { AccessMode, KernelDef } from '../kernel.js';
import { checkScalarNames } from '../common/scalars.js';
import { checkArgNames, requireFloat } from '../common/validate.js';
import { accumulateScalar, dropoutParams, requireLike } from '../common/norm-checks.js';

export const dropoutBackwardDef: KernelDef = {
  name: 'dropout_backward',
  args: [
    { name: 'dy', mode: 'r' },
    { name: 'dx', mode: 'rw' },
  ],
  validate(args, scalars) {
    const op = 'dropout_backward';
    checkArgNames(op, dropoutBackwardDef.args, args);
    checkScalarNames(op, scalars, ['p', 'seed', 'offset', 'accumulate']);
    dropoutParams(op, scalars);
    accumulateScalar(op, scalars);
    requireFloat(op, 'dy', args.dy!);
    requireLike(op, 'dy', ['dx'], args);
  },
  modes(scalars): Readonly<Record<string, AccessMode>> {
    return { dx: accumulateScalar('dropout_backward', scalars) ? 'rw' : 'w' };
  },
  cost(args, scalars) {
    const n = numel(args.dy!.shape);
    const passes = accumulateScalar('dropout_backward', scalars) ? 3 : 2;
    return { flops: 40 * n, bytes: passes * n * bytesPerElement(args.dy!.dtype) };
  },
};
