import type { KernelDef } from '../kernel.js';
import { checkScalarNames } from '../common/scalars.js';
import { checkArgNames } from '../common/validate.js';
import { elementSize, linearCost } from './cost.js';
import { linearForwardDims, requireLinearArgs } from './shapes.js';

/** y[m,n] = x[m,k]·w[n,k]ᵀ + b[n] (PyTorch's F.linear), one float dtype for all. */
export const linearDef: KernelDef = {
  name: 'linear',
  args: [
    { name: 'x', mode: 'r' },
    { name: 'w', mode: 'r' },
    { name: 'b', mode: 'r' },
    { name: 'y', mode: 'w' },
  ],
  validate(args, scalars) {
    checkArgNames('linear', linearDef.args, args);
    checkScalarNames('linear', scalars, []);
    requireLinearArgs('linear', args, { x: 2, w: 2, b: 1, y: 2 });
    linearForwardDims('linear', args, ['y']);
  },
  cost(args) {
    const [m, k] = args.x!.shape as [number, number];
    const n = args.w!.shape[0]!;
    return linearCost({ m, n, k }, elementSize(args, 'y'), m * k + n * k + n + m * n, 1);
  },
};
