import type { ReferenceFn } from '../common/reference.js';
import { enumScalar } from '../common/scalars.js';
import { ACT_OPS, actGrad } from '../activation/ops.js';
import { accumulateOf } from '../linear_dw/def.js';

export const activationBackwardReference: ReferenceFn = (args, scalars) => {
  const grad = actGrad(enumScalar('activation_backward', scalars, 'op', ACT_OPS));
  const accumulate = accumulateOf('activation_backward', scalars);
  const x = args.x!.values;
  const dy = args.dy!.values;
  const old = args.dx!.values;
  return { dx: x.map((v, i) => grad(v) * dy[i]! + (accumulate ? old[i]! : 0)) };
};
