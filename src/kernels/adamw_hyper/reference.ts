import type { ReferenceFn } from '../common/reference.js';
import { gradFactor } from '../optim_common/grad-transform.js';
import { adamwHyperConstants, adamwHyperParams, adamwHyperTransform } from '../adamw/params.js';
import { adamwElement } from '../adamw/reference.js';

/**
 * The _hyper ops in float64: adamw's element formula with the constants taken from `hyper`; `master`
 * names the f32 master copy of adamw_mixed_hyper (absent for adamw_hyper, whose p is updated).
 */
function hyperReference(op: string, mixed: boolean): ReferenceFn {
  return (args, scalars) => {
    const params = adamwHyperParams(op, scalars);
    const w = Float64Array.from((mixed ? args.master! : args.p!).values);
    const m = Float64Array.from(args.m!.values);
    const v = Float64Array.from(args.v!.values);
    const factor = gradFactor(adamwHyperTransform(params, args.hyper!.values), args.norm!.values[0]!);
    const out = (): Record<string, Float64Array> =>
      mixed ? { p: Float64Array.from(w), m, v, master: w } : { p: w, m, v };
    if (factor === null) return mixed ? { p: Float64Array.from(args.p!.values), m, v, master: w } : out();
    const c = adamwHyperConstants(params, args.hyper!.values);
    const g = args.g!.values;
    for (let i = 0; i < w.length; i++) {
      const gi = g[i]! * factor.scale * factor.clip;
      [w[i], m[i], v[i]] = adamwElement(c, params.weightDecay, w[i]!, gi, m[i]!, v[i]!);
    }
    return out();
  };
}

export const adamwHyperReference: ReferenceFn = hyperReference('adamw_hyper', false);
export const adamwMixedHyperReference: ReferenceFn = hyperReference('adamw_mixed_hyper', true);
