/**
 * dropout: y = keep ? x/(1 − p) : 0 with keep ⇔ philox uniform(seed, offset + i) ≥ p (mask.ts has the
 * counter layout, common/norm-checks.ts the integer threshold that makes every backend agree exactly).
 * The mask is never stored: dropout_backward recomputes it from the same (p, seed, offset).
 */
import { bytesPerElement } from '../../core/dtype.js';
import { numel } from '../../core/shape.js';
import type { KernelDef } from '../kernel.js';
import { checkScalarNames } from '../common/scalars.js';
import { checkArgNames, requireFloat } from '../common/validate.js';
import { dropoutParams, requireLike } from '../common/norm-checks.js';

export const dropoutDef: KernelDef = {
  name: 'dropout',
  args: [
    { name: 'x', mode: 'r' },
    { name: 'y', mode: 'w' },
  ],
  validate(args, scalars) {
    checkArgNames('dropout', dropoutDef.args, args);
    checkScalarNames('dropout', scalars, ['p', 'seed', 'offset']);
    dropoutParams('dropout', scalars);
    requireFloat('dropout', 'x', args.x!);
    requireLike('dropout', 'x', ['y'], args);
  },
  cost(args) {
    const n = numel(args.x!.shape);
    return { flops: 40 * n, bytes: 2 * n * bytesPerElement(args.x!.dtype) };
  },
};
