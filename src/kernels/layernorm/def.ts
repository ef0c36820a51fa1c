/**
 * layernorm: y = (x − μ)·rstd·w + b over the last axis of x [.., C], rstd = 1/√(var + eps) with the
 * biased variance; mean and rstd (shape of x without its last axis, f32 or f64 for f64 x) are saved
 * for layernorm_backward.
 */
import type { KernelDef } from '../kernel.js';
import { checkScalarNames } from '../common/scalars.js';
import { checkArgNames } from '../common/validate.js';
import { epsScalar, requireAffine, requireLike, requireStats, rowsOf } from '../common/norm-checks.js';
import { layernormCost } from './cost.js';

export const layernormDef: KernelDef = {
  name: 'layernorm',
  args: [
    { name: 'x', mode: 'r' },
    { name: 'w', mode: 'r' },
    { name: 'b', mode: 'r' },
    { name: 'y', mode: 'w' },
    { name: 'mean', mode: 'w' },
    { name: 'rstd', mode: 'w' },
  ],
  validate(args, scalars) {
    const op = 'layernorm';
    checkArgNames(op, layernormDef.args, args);
    checkScalarNames(op, scalars, ['eps']);
    epsScalar(op, scalars);
    const x = args.x!;
    const { cols } = rowsOf(op, 'x', x);
    requireLike(op, 'x', ['y'], args);
    requireAffine(op, x, cols, args);
    requireStats(op, ['mean', 'rstd'], x, args);
  },
  cost: layernormCost,
};
