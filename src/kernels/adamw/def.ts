import type { KernelDef } from '../kernel.js';
import {
  type ArgDescs,
  checkArgNames,
  requireFloat,
  requireSameDType,
  requireSameShape,
} from '../common/validate.js';
import { requireDType, requireScalarTensor } from '../optim_common/grad-transform.js';
import { optimizerCost } from '../optim_common/cost.js';
import { adamwParams } from './params.js';

/**
 * One AdamW step on one parameter tensor, PyTorch's formulas in PyTorch's order, with the gradient
 * unscaled, clipped by the global norm and the step skipped on overflow (docs/deep-learning-ops.md).
 */
export const adamwDef: KernelDef = {
  name: 'adamw',
  args: [
    { name: 'p', mode: 'rw' },
    { name: 'g', mode: 'r' },
    { name: 'm', mode: 'rw' },
    { name: 'v', mode: 'rw' },
    { name: 'norm', mode: 'r' },
  ],
  validate(args, scalars) {
    checkArgNames('adamw', adamwDef.args, args);
    adamwParams('adamw', scalars);
    checkAdamwTensors('adamw', args);
  },
  cost: (args) => optimizerCost(args, ['p', 'm', 'v'], ['g', 'norm'], 14),
};

/** adamw's tensors (shared with adamw_hyper): p f32/f64, m and v of its dtype, g any float, one shape. */
export function checkAdamwTensors(op: string, args: ArgDescs): void {
  requireDType(op, 'p', args.p!, ['f32', 'f64']);
  requireFloat(op, 'g', args.g!);
  requireSameDType(op, ['p', 'm', 'v'], args);
  requireSameShape(op, ['p', 'g', 'm', 'v'], args);
  requireScalarTensor(op, 'norm', args.norm!);
}
