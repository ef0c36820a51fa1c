import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import type { Scalars } from '../../devices/device.js';
import { forFloatChunks } from '../common/cpu-float.js';
import { type GradTransformScalars, gradFactor } from '../optim_common/grad-transform.js';
import {
  type AdamWConstants,
  adamwConstants,
  adamwHyperConstants,
  adamwHyperParams,
  adamwHyperTransform,
  adamwParams,
} from './params.js';

/** What one update needs: the gradient transform, the weight decay and the step's constants. */
export interface AdamWUpdate {
  readonly transform: GradTransformScalars & { readonly weightDecay: number };
  readonly constants: AdamWConstants;
}

export type AdamWUpdateOf = (args: readonly CpuArg[], scalars: Scalars) => AdamWUpdate;

/** adamw's and adamw_mixed's: every value from the scalars. */
export function scalarUpdate(op: string): AdamWUpdateOf {
  return (_args, scalars) => {
    const p = adamwParams(op, scalars);
    return { transform: p, constants: adamwConstants(p) };
  };
}

/** The _hyper ops': lr and the bias corrections from the f64 tensor at `hyperIndex`. */
export function hyperUpdate(op: string, hyperIndex: number): AdamWUpdateOf {
  return (args, scalars) => {
    const p = adamwHyperParams(op, scalars);
    const hyper = args[hyperIndex]!.data;
    return { transform: adamwHyperTransform(p, hyper), constants: adamwHyperConstants(p, hyper) };
  };
}

/** What one call's element loop reads, shared by adamw and adamw_mixed. */
export interface AdamWStep {
  readonly c: AdamWConstants;
  /** The gradient factors, applied in this order: g·scale·clip. */
  readonly scale: number;
  readonly clip: number;
  /** 1 − lr·wd, or exactly 1 without weight decay. */
  readonly decay: number;
  /** lerp's weight and whether it takes lerp's small-weight branch. */
  readonly w: number;
  readonly small: boolean;
  readonly negStep: number;
}

/** The step's values from the call's scalars (and hyper), or null when it is skipped (norm at `normIndex`). */
export function adamwStep(
  updateOf: AdamWUpdateOf,
  args: readonly CpuArg[],
  scalars: Scalars,
  normIndex: number,
): AdamWStep | null {
  const { transform, constants: c } = updateOf(args, scalars);
  const factor = gradFactor(transform, args[normIndex]!.data[0]!);
  if (factor === null) return null;
  const w = c.lerpWeight;
  return {
    c,
    scale: factor.scale,
    clip: factor.clip,
    decay: transform.weightDecay !== 0 ? c.decay : 1,
    w,
    small: Math.abs(w) < 0.5,
    negStep: -c.stepSize,
  };
}

/** AdamW on the CPU: float64 arithmetic on the loaded values, one rounding on store. */
export function adamwCpuWith(updateOf: AdamWUpdateOf): CpuKernel {
  return (args, scalars) => {
    const step = adamwStep(updateOf, args, scalars, 4);
    if (step === null) return;
    const { c, scale, clip, decay, w, small, negStep } = step;
    forFloatChunks(
      args.slice(0, 4),
      [true, true, true, true],
      [true, false, true, true],
      ([p, g, m, v], n) => {
        for (let i = 0; i < n; i++) {
          const gi = g![i]! * scale * clip;
          const mi = m![i]!;
          const diff = gi - mi;
          const m1 = small ? mi + w * diff : gi - diff * (1 - w);
          const v1 = v![i]! * c.beta2 + c.oneMinusBeta2 * gi * gi;
          m![i] = m1;
          v![i] = v1;
          p![i] = p![i]! * decay + negStep * (m1 / (Math.sqrt(v1) / c.bias2Sqrt + c.eps));
        }
      },
    );
  };
}

export const adamwCpu: CpuKernel = adamwCpuWith(scalarUpdate('adamw'));
