import type { ReferenceFn } from '../common/reference.js';
import { gradFactor } from '../optim_common/grad-transform.js';
import { type AdamWConstants, adamwConstants, adamwParams, lerp } from './params.js';

/** One element of torch's AdamW in float64: returns [p, m, v] after the step. */
export function adamwElement(
  c: AdamWConstants,
  weightDecay: number,
  p: number,
  g: number,
  m: number,
  v: number,
): [number, number, number] {
  const pd = weightDecay !== 0 ? p * c.decay : p;
  const m1 = lerp(m, g, c.lerpWeight);
  const v1 = v * c.beta2 + c.oneMinusBeta2 * g * g;
  const denom = Math.sqrt(v1) / c.bias2Sqrt + c.eps;
  return [pd + -c.stepSize * (m1 / denom), m1, v1];
}

export const adamwReference: ReferenceFn = (args, scalars) => {
  const params = adamwParams('adamw', scalars);
  const p = Float64Array.from(args.p!.values);
  const m = Float64Array.from(args.m!.values);
  const v = Float64Array.from(args.v!.values);
  const factor = gradFactor(params, args.norm!.values[0]!);
  if (factor === null) return { p, m, v };
  const c = adamwConstants(params);
  const g = args.g!.values;
  for (let i = 0; i < p.length; i++) {
    [p[i], m[i], v[i]] = adamwElement(
      c,
      params.weightDecay,
      p[i]!,
      g[i]! * factor.scale * factor.clip,
      m[i]!,
      v[i]!,
    );
  }
  return { p, m, v };
};
