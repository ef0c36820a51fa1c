import type { KernelDef } from '../kernel.js';
import { checkScalarNames, enumScalar } from '../common/scalars.js';
import { checkArgNames } from '../common/validate.js';
import { ACT_OPS } from '../activation/ops.js';
import { elementSize, linearCost } from '../linear/cost.js';
import { linearForwardDims, requireLinearArgs } from '../linear/shapes.js';

/** pre = x·wᵀ + b; y = act(pre), act 'gelu' (tanh form) or 'relu'; pre is kept for the backward. */
export const linearActDef: KernelDef = {
  name: 'linear_act',
  args: [
    { name: 'x', mode: 'r' },
    { name: 'w', mode: 'r' },
    { name: 'b', mode: 'r' },
    { name: 'pre', mode: 'w' },
    { name: 'y', mode: 'w' },
  ],
  validate(args, scalars) {
    checkArgNames('linear_act', linearActDef.args, args);
    checkScalarNames('linear_act', scalars, ['act']);
    enumScalar('linear_act', scalars, 'act', ACT_OPS);
    requireLinearArgs('linear_act', args, { x: 2, w: 2, b: 1, pre: 2, y: 2 });
    linearForwardDims('linear_act', args, ['pre', 'y']);
  },
  cost(args) {
    const [m, k] = args.x!.shape as [number, number];
    const n = args.w!.shape[0]!;
    return linearCost({ m, n, k }, elementSize(args, 'y'), m * k + n * k + n + 2 * m * n, 8);
  },
};
