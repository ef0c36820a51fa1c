/**
 * layernorm_backward (PyTorch's layer_norm backward) from the saved mean and rstd:
 *   x̂ = (x − mean)·rstd, g = dy·w,
 *   dx (+)= rstd·(g − mean_C(g) − x̂·mean_C(g·x̂))   (accumulateDx),
 *   dw (+)= Σ_rows dy·x̂,  db (+)= Σ_rows dy          (accumulate).
 * An output that does not accumulate is only written (mode 'w'), so its old contents never matter.
 */
import type { AccessMode, KernelDef } from '../kernel.js';
import { checkScalarNames } from '../common/scalars.js';
import { checkArgNames } from '../common/validate.js';
import {
  accumulateScalar,
  requireAffine,
  requireDType,
  requireLike,
  requireShape,
  requireStats,
  rowsOf,
} from '../common/norm-checks.js';
import { layernormBackwardCost } from './cost.js';

export const layernormBackwardDef: KernelDef = {
  name: 'layernorm_backward',
  args: [
    { name: 'dy', mode: 'r' },
    { name: 'x', mode: 'r' },
    { name: 'w', mode: 'r' },
    { name: 'mean', mode: 'r' },
    { name: 'rstd', mode: 'r' },
    { name: 'dx', mode: 'rw' },
    { name: 'dw', mode: 'rw' },
    { name: 'db', mode: 'rw' },
  ],
  validate(args, scalars) {
    const op = 'layernorm_backward';
    checkArgNames(op, layernormBackwardDef.args, args);
    checkScalarNames(op, scalars, ['accumulate', 'accumulateDx']);
    accumulateScalar(op, scalars);
    accumulateScalar(op, scalars, 'accumulateDx');
    const x = args.x!;
    const { cols } = rowsOf(op, 'x', x);
    requireLike(op, 'x', ['dy', 'dx'], args);
    requireAffine(op, x, cols, args);
    requireStats(op, ['mean', 'rstd'], x, args);
    for (const n of ['dw', 'db']) {
      requireDType(op, n, args[n]!, x.dtype);
      requireShape(op, n, args[n]!, [cols]);
    }
  },
  modes(scalars): Readonly<Record<string, AccessMode>> {
    const acc = accumulateScalar('layernorm_backward', scalars) ? 'rw' : 'w';
    const accDx = accumulateScalar('layernorm_backward', scalars, 'accumulateDx') ? 'rw' : 'w';
    return { dx: accDx, dw: acc, db: acc };
  },
  cost: layernormBackwardCost,
};
