/**
 * What every optimizer op does to the gradient before its update (docs/deep-learning-ops.md, optim
 * group): unscale by `gradScale`, clip by the global norm like torch.nn.utils.clip_grad_norm_, and skip
 * the whole step when the norm is not finite (the fp16 overflow skip of torch.amp.GradScaler).
 * `norm` is the *sum of squares* of the still-scaled gradients, so the true norm is √norm·gradScale.
 * Shared by the definitions, the float64 references and the CPU kernels, so they cannot disagree.
 */
import type { DType } from '../../core/dtype.js';
import { TandemError } from '../../core/errors.js';
import { numel, shapeStr } from '../../core/shape.js';
import type { Scalars, TensorDesc } from '../../devices/device.js';
import { boolScalar, numberScalar } from '../common/scalars.js';

export interface GradTransformScalars {
  readonly gradScale: number;
  readonly maxNorm: number;
  readonly skipNonFinite: boolean;
}

export const GRAD_TRANSFORM_SCALARS = ['gradScale', 'maxNorm', 'skipNonFinite'] as const;

/** torch.nn.utils.clip_grad_norm_ adds this to the norm before dividing. */
export const CLIP_EPS = 1e-6;

function invalid(op: string, name: string, message: string): TandemError {
  return new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `${op}: scalar "${name}" ${message}`, {
    op,
    scalar: name,
  });
}

export function gradTransformScalars(op: string, scalars: Scalars): GradTransformScalars {
  const gradScale = numberScalar(op, scalars, 'gradScale', 1);
  if (!(gradScale > 0)) throw invalid(op, 'gradScale', `must be > 0, got ${gradScale}`);
  const maxNorm = numberScalar(op, scalars, 'maxNorm', 0);
  if (maxNorm < 0) throw invalid(op, 'maxNorm', `must be >= 0 (0 = no clipping), got ${maxNorm}`);
  return { gradScale, maxNorm, skipNonFinite: boolScalar(op, scalars, 'skipNonFinite', false) };
}

/** Checks a scalar lies in [lo, hi) (hi = Infinity for no upper bound); returns it. */
export function rangeScalar(
  op: string,
  scalars: Scalars,
  name: string,
  fallback: number | undefined,
  lo: number,
  hi: number,
): number {
  const v = numberScalar(op, scalars, name, fallback);
  if (v < lo || v >= hi) {
    const range = hi === Infinity ? `>= ${lo}` : `in [${lo}, ${hi})`;
    throw invalid(op, name, `must be ${range}, got ${v}`);
  }
  return v;
}

/**
 * The factor g′ = g·factor applies to every gradient element, or null when the step is skipped.
 * clip = min(1, maxNorm / (√norm·gradScale + 1e-6)) as torch's clamp(max=1): a NaN norm gives a NaN
 * factor (torch propagates it too), which is why skipNonFinite exists.
 */
export function gradFactor(t: GradTransformScalars, norm: number): { scale: number; clip: number } | null {
  if (t.skipNonFinite && !Number.isFinite(norm)) return null;
  if (t.maxNorm === 0) return { scale: t.gradScale, clip: 1 };
  const coef = t.maxNorm / (Math.sqrt(norm) * t.gradScale + CLIP_EPS);
  return { scale: t.gradScale, clip: coef > 1 ? 1 : coef };
}

/** `norm` (and sumsq's `acc`): one element, f32 or f64. */
export function requireScalarTensor(op: string, name: string, desc: TensorDesc): void {
  if (numel(desc.shape) !== 1) {
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `${op}: ${name} must hold exactly one element, got shape ${shapeStr(desc.shape)}`,
      { op, arg: name, shape: desc.shape },
    );
  }
  if (desc.dtype !== 'f32' && desc.dtype !== 'f64') {
    throw new TandemError('TANDEM_ERR_DTYPE', `${op}: ${name} must be f32 or f64, got ${desc.dtype}`, {
      op,
      arg: name,
      dtype: desc.dtype,
    });
  }
}

/** A tensor argument whose dtype must be one of `allowed`. */
export function requireDType(op: string, name: string, desc: TensorDesc, allowed: readonly DType[]): void {
  if (!allowed.includes(desc.dtype)) {
    throw new TandemError(
      'TANDEM_ERR_DTYPE',
      `${op}: ${name} must be ${allowed.join(' or ')}, got ${desc.dtype}`,
      { op, arg: name, dtype: desc.dtype },
    );
  }
}
