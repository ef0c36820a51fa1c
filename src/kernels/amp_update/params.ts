/**
 * amp_update: fp16's loss-scale bookkeeping on the device, so a step never waits for the host to read
 * whether its gradients overflowed (PyTorch's GradScaler with a fused optimizer does the same: its
 * found_inf, `_amp_update_scale_` and the optimizer's step count are device tensors).
 *
 * From the squared gradient norm (sumsq of the still-scaled gradients: inf/NaN = overflow) it
 *  - on a clean step advances the optimizer's step count t and writes AdamW's per-step values for the
 *    _hyper update ops: lr (read from the `lr` tensor the host writes each step, so a recorded step
 *    replays with the schedule's rate), lr/(1 − β1ᵗ), (1 − β2ᵗ)^0.5 and gradScale = f32(1/scale) (torch's
 *    `scale.double().reciprocal().float()`); on an overflow it leaves t and those values alone (the
 *    update ops skip the step themselves: skipNonFinite);
 *  - updates the scale and growth tracker exactly as grad-scaler.ts's GradScaler.update (×backoff and
 *    tracker 0 on an overflow; ×growth after growthInterval clean steps unless that leaves the f32 range).
 * The scale lives in an f64 tensor holding an f32 value (what softmax_xent_scaled multiplies by).
 */
import type { Scalars } from '../../devices/device.js';
import { checkScalarNames, intScalar } from '../common/scalars.js';
import { rangeScalar } from '../optim_common/grad-transform.js';
import { TandemError } from '../../core/errors.js';
import { adamwHyperValues } from '../adamw/params.js';

export const AMP_SCALARS = [
  'lr',
  'beta1',
  'beta2',
  'growthFactor',
  'backoffFactor',
  'growthInterval',
] as const;

export interface AmpParams {
  readonly beta1: number;
  readonly beta2: number;
  readonly growthFactor: number;
  readonly backoffFactor: number;
  readonly growthInterval: number;
}

export function ampParams(op: string, scalars: Scalars): AmpParams {
  checkScalarNames(op, scalars, AMP_SCALARS);
  const growthFactor = rangeScalar(op, scalars, 'growthFactor', 2, 1, Infinity);
  const growthInterval = intScalar(op, scalars, 'growthInterval', 2000);
  if (!(growthFactor > 1) || growthInterval < 1)
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `${op}: growthFactor must be > 1 and growthInterval an integer >= 1, got ${growthFactor} and ${growthInterval}`,
      { op },
    );
  return {
    beta1: rangeScalar(op, scalars, 'beta1', 0.9, 0, 1),
    beta2: rangeScalar(op, scalars, 'beta2', 0.999, 0, 1),
    growthFactor,
    backoffFactor: rangeScalar(op, scalars, 'backoffFactor', 0.5, Number.MIN_VALUE, 1),
    growthInterval,
  };
}

/** The state after one step: scale, [tracker, t], and the update ops' values (null: left as they were). */
export interface AmpResult {
  readonly scale: number;
  readonly tracker: number;
  readonly steps: number;
  readonly hyper: readonly number[] | null;
}

/** One amp_update in float64, shared by the CPU kernel and the reference (the CUDA program mirrors it). */
export function ampStep(
  p: AmpParams,
  lr: number,
  norm: number,
  scale: number,
  tracker: number,
  steps: number,
): AmpResult {
  if (!Number.isFinite(norm)) {
    return { scale: Math.fround(scale * p.backoffFactor), tracker: 0, steps, hyper: null };
  }
  const t = steps + 1;
  const hyper = adamwHyperValues(p, lr, t, Math.fround(1 / scale));
  const successful = tracker + 1;
  if (successful !== p.growthInterval) return { scale, tracker: successful, steps: t, hyper };
  const grown = Math.fround(scale * p.growthFactor);
  return { scale: Number.isFinite(grown) ? grown : scale, tracker: 0, steps: t, hyper };
}
