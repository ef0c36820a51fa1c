import type { ReferenceFn } from '../common/reference.js';
import { gradFactor } from '../optim_common/grad-transform.js';
import { sgdParams } from './params.js';

/** torch's _single_tensor_sgd in float64, operation by operation. */
export const sgdReference: ReferenceFn = (args, scalars) => {
  const s = sgdParams('sgd', scalars);
  const p = Float64Array.from(args.p!.values);
  const buf = Float64Array.from(args.buf!.values);
  const factor = gradFactor(s, args.norm!.values[0]!);
  if (factor === null) return { p, buf };
  const g = args.g!.values;
  for (let i = 0; i < p.length; i++) {
    let d = g[i]! * factor.scale * factor.clip;
    if (s.weightDecay !== 0) d = d + s.weightDecay * p[i]!; // grad.add(param, alpha=wd)
    if (s.momentum !== 0) {
      buf[i] = s.first ? d : buf[i]! * s.momentum + (1 - s.dampening) * d;
      d = s.nesterov ? d + s.momentum * buf[i]! : buf[i]!;
    }
    p[i] = p[i]! + -s.lr * d; // param.add_(grad, alpha=-lr)
  }
  return { p, buf };
};
