import type { ReferenceFn } from '../common/reference.js';
import { gradFactor } from '../optim_common/grad-transform.js';
import { adamwConstants, adamwParams } from '../adamw/params.js';
import { adamwElement } from '../adamw/reference.js';

/** AdamW on the master copy in float64; p is the new master (the checker's tolerance covers p's rounding). */
export const adamwMixedReference: ReferenceFn = (args, scalars) => {
  const params = adamwParams('adamw_mixed', scalars);
  const master = Float64Array.from(args.master!.values);
  const m = Float64Array.from(args.m!.values);
  const v = Float64Array.from(args.v!.values);
  const factor = gradFactor(params, args.norm!.values[0]!);
  if (factor === null) return { p: Float64Array.from(args.p!.values), m, v, master };
  const c = adamwConstants(params);
  const g = args.g!.values;
  for (let i = 0; i < master.length; i++) {
    const gi = g[i]! * factor.scale * factor.clip;
    [master[i], m[i], v[i]] = adamwElement(c, params.weightDecay, master[i]!, gi, m[i]!, v[i]!);
  }
  return { p: Float64Array.from(master), m, v, master };
};
