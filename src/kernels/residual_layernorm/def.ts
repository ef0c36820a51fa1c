/**
 * residual_layernorm: s = a + r (stored, the residual stream for the next block), y = layernorm(s) with
 * the layernorm of the stored s's values (one rounding of s for f16/bf16, as an unfused add would do).
 */
import type { KernelDef } from '../kernel.js';
import { checkScalarNames } from '../common/scalars.js';
import { checkArgNames } from '../common/validate.js';
import { epsScalar, requireAffine, requireLike, requireStats, rowsOf } from '../common/norm-checks.js';
import { residualLayernormCost } from './cost.js';

export const residualLayernormDef: KernelDef = {
  name: 'residual_layernorm',
  args: [
    { name: 'a', mode: 'r' },
    { name: 'r', mode: 'r' },
    { name: 's', mode: 'w' },
    { name: 'w', mode: 'r' },
    { name: 'b', mode: 'r' },
    { name: 'y', mode: 'w' },
    { name: 'mean', mode: 'w' },
    { name: 'rstd', mode: 'w' },
  ],
  validate(args, scalars) {
    const op = 'residual_layernorm';
    checkArgNames(op, residualLayernormDef.args, args);
    checkScalarNames(op, scalars, ['eps']);
    epsScalar(op, scalars);
    const a = args.a!;
    const { cols } = rowsOf(op, 'a', a);
    requireLike(op, 'a', ['r', 's', 'y'], args);
    requireAffine(op, a, cols, args);
    requireStats(op, ['mean', 'rstd'], a, args);
  },
  cost: residualLayernormCost,
};
