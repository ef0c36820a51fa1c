import type { KernelDef } from '../kernel.js';
import { type ArgDescs, checkArgNames, requireFloat, requireSameShape } from '../common/validate.js';
import { optimizerCost } from '../optim_common/cost.js';
import { requireDType, requireScalarTensor } from '../optim_common/grad-transform.js';
import { adamwParams } from '../adamw/params.js';

/**
 * AdamW for a 16-bit parameter: the step runs on the f32 `master` copy (with f32 moments) exactly as
 * `adamw`, then p = round(master) — the usual mixed-precision recipe (master weights in f32).
 */
export const adamwMixedDef: KernelDef = {
  name: 'adamw_mixed',
  args: [
    { name: 'p', mode: 'rw' },
    { name: 'g', mode: 'r' },
    { name: 'm', mode: 'rw' },
    { name: 'v', mode: 'rw' },
    { name: 'master', mode: 'rw' },
    { name: 'norm', mode: 'r' },
  ],
  validate(args, scalars) {
    checkArgNames('adamw_mixed', adamwMixedDef.args, args);
    adamwParams('adamw_mixed', scalars);
    checkAdamwMixedTensors('adamw_mixed', args);
  },
  cost: (args) => optimizerCost(args, ['master', 'm', 'v', 'p'], ['g', 'norm'], 14),
};

/** adamw_mixed's tensors (shared with adamw_mixed_hyper): p f16/bf16, m, v and master f32, one shape. */
export function checkAdamwMixedTensors(op: string, args: ArgDescs): void {
  requireDType(op, 'p', args.p!, ['f16', 'bf16']);
  requireFloat(op, 'g', args.g!);
  for (const name of ['m', 'v', 'master']) requireDType(op, name, args[name]!, ['f32']);
  requireSameShape(op, ['p', 'g', 'm', 'v', 'master'], args);
  requireScalarTensor(op, 'norm', args.norm!);
}
