import type { ReferenceFn } from '../common/reference.js';
import { ampParams, ampStep } from './params.js';

export const ampUpdateReference: ReferenceFn = (args, scalars) => {
  const state = args.state!.values;
  const r = ampStep(
    ampParams('amp_update', scalars),
    args.lr!.values[0]!,
    args.norm!.values[0]!,
    args.scale!.values[0]!,
    state[0]!,
    state[1]!,
  );
  return {
    scale: Float64Array.of(r.scale),
    state: Float64Array.of(r.tracker, r.steps),
    hyper: Float64Array.from(r.hyper ?? args.hyper!.values),
  };
};
