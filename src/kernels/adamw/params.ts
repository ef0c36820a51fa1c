/**
 * AdamW's scalars and the per-step constants PyTorch computes in Python (double) before touching any
 * tensor (torch/optim/adam.py `_single_tensor_adam` with decoupled weight decay, the AdamW path):
 * `param.mul_(1 - lr*wd)`, `exp_avg.lerp_(g, 1 - beta1)`, `exp_avg_sq.mul_(beta2).addcmul_(g, g, 1 - beta2)`,
 * `step_size = lr / (1 - beta1**step)`, `denom = sqrt(v) / sqrt(1 - beta2**step) + eps`,
 * `param.addcdiv_(m, denom, value=-step_size)`. Shared by adamw and adamw_mixed.
 */
import type { Scalars } from '../../devices/device.js';
import { checkScalarNames, intScalar } from '../common/scalars.js';
import {
  GRAD_TRANSFORM_SCALARS,
  type GradTransformScalars,
  gradTransformScalars,
  rangeScalar,
} from '../optim_common/grad-transform.js';
import { TandemError } from '../../core/errors.js';

export const ADAMW_SCALARS: readonly string[] = [
  'lr',
  'beta1',
  'beta2',
  'eps',
  'weightDecay',
  'step',
  ...GRAD_TRANSFORM_SCALARS,
];

export interface AdamWParams extends GradTransformScalars {
  readonly lr: number;
  readonly beta1: number;
  readonly beta2: number;
  readonly eps: number;
  readonly weightDecay: number;
  readonly step: number;
}

/** Parses and checks the scalars with torch.optim.AdamW's own bounds. */
export function adamwParams(op: string, scalars: Scalars): AdamWParams {
  checkScalarNames(op, scalars, ADAMW_SCALARS);
  const step = intScalar(op, scalars, 'step');
  if (step < 1) {
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `${op}: scalar "step" must be >= 1, got ${step}`, {
      op,
      scalar: 'step',
    });
  }
  return {
    lr: rangeScalar(op, scalars, 'lr', undefined, 0, Infinity),
    beta1: rangeScalar(op, scalars, 'beta1', 0.9, 0, 1),
    beta2: rangeScalar(op, scalars, 'beta2', 0.999, 0, 1),
    eps: rangeScalar(op, scalars, 'eps', 1e-8, 0, Infinity),
    weightDecay: rangeScalar(op, scalars, 'weightDecay', 0.01, 0, Infinity),
    step,
    ...gradTransformScalars(op, scalars),
  };
}

/** The scalars of one step exactly as torch forms them (double arithmetic, in this order). */
export interface AdamWConstants {
  /** 1 - lr·weightDecay: the decoupled decay factor. */
  readonly decay: number;
  /** 1 - beta1: lerp's weight. */
  readonly lerpWeight: number;
  readonly beta2: number;
  /** 1 - beta2: addcmul's value. */
  readonly oneMinusBeta2: number;
  /** lr / (1 - beta1^step). */
  readonly stepSize: number;
  /** (1 - beta2^step)^0.5. */
  readonly bias2Sqrt: number;
  readonly eps: number;
}

/** The two values of step `step` that carry the bias corrections: lr/(1 − β1ᵗ) and (1 − β2ᵗ)^0.5. */
export function biasCorrections(
  beta1: number,
  beta2: number,
  lr: number,
  step: number,
): Pick<AdamWConstants, 'stepSize' | 'bias2Sqrt'> {
  return { stepSize: lr / (1 - beta1 ** step), bias2Sqrt: (1 - beta2 ** step) ** 0.5 };
}

export function adamwConstants(p: AdamWParams): AdamWConstants {
  return {
    decay: 1 - p.lr * p.weightDecay,
    lerpWeight: 1 - p.beta1,
    beta2: p.beta2,
    oneMinusBeta2: 1 - p.beta2,
    ...biasCorrections(p.beta1, p.beta2, p.lr, p.step),
    eps: p.eps,
  };
}

/** torch.lerp's formula (ATen's lerp for weight < 0.5 and otherwise): the branch keeps it exact at w = 1. */
export function lerp(start: number, end: number, weight: number): number {
  const diff = end - start;
  return Math.abs(weight) < 0.5 ? start + weight * diff : end - diff * (1 - weight);
}

/**
 * adamw_hyper's scalars: AdamW's less the values that can change every step (lr, step, gradScale), which
 * the op reads from its `hyper` tensor instead — a recorded training step (a CUDA graph) replays with new
 * values, and fp16's loss scale can be decided on the device (amp_update writes `hyper`).
 */
export const ADAMW_HYPER_SCALARS: readonly string[] = ADAMW_SCALARS.filter(
  (s) => s !== 'lr' && s !== 'step' && s !== 'gradScale',
);

export type AdamWHyperParams = Omit<AdamWParams, 'lr' | 'step'>;

export function adamwHyperParams(op: string, scalars: Scalars): AdamWHyperParams {
  checkScalarNames(op, scalars, ADAMW_HYPER_SCALARS);
  return {
    beta1: rangeScalar(op, scalars, 'beta1', 0.9, 0, 1),
    beta2: rangeScalar(op, scalars, 'beta2', 0.999, 0, 1),
    eps: rangeScalar(op, scalars, 'eps', 1e-8, 0, Infinity),
    weightDecay: rangeScalar(op, scalars, 'weightDecay', 0.01, 0, Infinity),
    ...gradTransformScalars(op, scalars),
  };
}

/**
 * Elements of adamw_hyper's `hyper` tensor (f64): lr, lr/(1 − β1ᵗ), (1 − β2ᵗ)^0.5, and gradScale (what
 * every gradient is multiplied by: 1, or 1/loss scale in fp16).
 */
export const HYPER_LENGTH = 4;

/** The `hyper` values of step `step` at rate `lr`: the same doubles adamwConstants forms. */
export function adamwHyperValues(
  p: Pick<AdamWHyperParams, 'beta1' | 'beta2'>,
  lr: number,
  step: number,
  gradScale = 1,
): [number, number, number, number] {
  const c = biasCorrections(p.beta1, p.beta2, lr, step);
  return [lr, c.stepSize, c.bias2Sqrt, gradScale];
}

/** The gradient transform of a _hyper op: its scalars' clipping and skip, `hyper`'s gradScale. */
export function adamwHyperTransform(p: AdamWHyperParams, hyper: ArrayLike<number>): AdamWHyperParams {
  return { ...p, gradScale: hyper[3]! };
}

/** The step's constants from `hyper` (decay = 1 − lr·wd formed here, as adamwConstants does). */
export function adamwHyperConstants(p: AdamWHyperParams, hyper: ArrayLike<number>): AdamWConstants {
  const lr = hyper[0]!;
  return {
    decay: 1 - lr * p.weightDecay,
    lerpWeight: 1 - p.beta1,
    beta2: p.beta2,
    oneMinusBeta2: 1 - p.beta2,
    stepSize: hyper[1]!,
    bias2Sqrt: hyper[2]!,
    eps: p.eps,
  };
}
