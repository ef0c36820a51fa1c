import type { KernelDef } from '../kernel.js';
import { checkArgNames, requireFloat, requireSameDType, requireSameShape } from '../common/validate.js';
import { optimizerCost } from '../optim_common/cost.js';
import { requireScalarTensor } from '../optim_common/grad-transform.js';
import { sgdParams } from './params.js';

/** One SGD step (momentum, dampening, nesterov, weight decay) with unscale, clipping and overflow skip. */
export const sgdDef: KernelDef = {
  name: 'sgd',
  args: [
    { name: 'p', mode: 'rw' },
    { name: 'g', mode: 'r' },
    { name: 'buf', mode: 'rw' },
    { name: 'norm', mode: 'r' },
  ],
  validate(args, scalars) {
    checkArgNames('sgd', sgdDef.args, args);
    sgdParams('sgd', scalars);
    requireFloat('sgd', 'p', args.p!);
    requireFloat('sgd', 'g', args.g!);
    requireSameDType('sgd', ['p', 'buf'], args);
    requireSameShape('sgd', ['p', 'g', 'buf'], args);
    requireScalarTensor('sgd', 'norm', args.norm!);
  },
  cost: (args) => optimizerCost(args, ['p', 'buf'], ['g', 'norm'], 6),
};
