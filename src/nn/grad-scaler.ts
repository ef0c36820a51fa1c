/**
 * Dynamic loss scaling with torch.amp.GradScaler's exact semantics (torch/amp/grad_scaler.py and ATen's
 * `_amp_update_scale_` kernel): the scale is an f32 starting at 2^16; an iteration whose gradients hold
 * an inf/NaN skips the optimizer step, multiplies the scale by backoffFactor (0.5) and resets the
 * growth tracker; growthInterval (2000) clean iterations in a row multiply it by growthFactor (2.0) —
 * unless that would overflow f32, in which case the scale stays — and reset the tracker.
 *
 * How it meets the optimizer ops: they take `gradScale = scaler.inverseScale` and `skipNonFinite: true`,
 * and skip the step on the device when the squared gradient norm (sumsq of the still-scaled gradients)
 * is inf/NaN — torch's found_inf. After the step the caller reads that norm (one number) and calls
 * `update(!Number.isFinite(norm))`; the result says whether the step happened, so an optimizer
 * wrapper advances its step count only then (torch never calls optimizer.step() on a skipped iteration).
 */
import { TandemError } from '../core/errors.js';

export interface GradScalerOptions {
  readonly initScale?: number;
  readonly growthFactor?: number;
  readonly backoffFactor?: number;
  readonly growthInterval?: number;
  /** false: scale 1, nothing is ever skipped, update() does nothing (torch's enabled=False). */
  readonly enabled?: boolean;
}

/** torch's GradScaler.state_dict(), key for key, so a checkpoint can carry it unchanged. */
export interface GradScalerState {
  readonly scale: number;
  readonly growth_factor: number;
  readonly backoff_factor: number;
  readonly growth_interval: number;
  readonly _growth_tracker: number;
}

export interface ScalerUpdate {
  /** Whether this iteration's optimizer step ran (false when its gradients overflowed). */
  readonly stepped: boolean;
  /** The scale for the next iteration. */
  readonly scale: number;
}

function invalid(message: string, details: Record<string, unknown> = {}): TandemError {
  return new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `GradScaler: ${message}`, details);
}

function finitePositive(name: string, v: number): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
    throw invalid(`${name} must be a finite number > 0, got ${String(v)}`, { option: name });
  }
  return v;
}

function checkFactors(growthFactor: number, backoffFactor: number, growthInterval: number): void {
  // torch asserts growth_factor > 1 and backoff_factor < 1.
  if (!(finitePositive('growthFactor', growthFactor) > 1))
    throw invalid(`growthFactor must be > 1, got ${growthFactor}`);
  if (!(finitePositive('backoffFactor', backoffFactor) < 1)) {
    throw invalid(`backoffFactor must be in (0, 1), got ${backoffFactor}`);
  }
  if (!Number.isSafeInteger(growthInterval) || growthInterval < 1) {
    throw invalid(`growthInterval must be an integer >= 1, got ${growthInterval}`);
  }
}

export class GradScaler {
  readonly enabled: boolean;
  private currentScale: number;
  private tracker = 0;
  private growthFactor: number;
  private backoffFactor: number;
  private growthInterval: number;

  constructor(options: GradScalerOptions = {}) {
    this.enabled = options.enabled ?? true;
    this.growthFactor = options.growthFactor ?? 2.0;
    this.backoffFactor = options.backoffFactor ?? 0.5;
    this.growthInterval = options.growthInterval ?? 2000;
    checkFactors(this.growthFactor, this.backoffFactor, this.growthInterval);
    // torch keeps the scale in a float32 tensor: torch.full((), init_scale, dtype=torch.float32).
    this.currentScale = Math.fround(finitePositive('initScale', options.initScale ?? 2 ** 16));
  }

  /** The factor the loss is multiplied by (1 when disabled). */
  get scale(): number {
    return this.enabled ? this.currentScale : 1;
  }

  /** Consecutive clean iterations since the last growth or overflow. */
  get growthTracker(): number {
    return this.enabled ? this.tracker : 0;
  }

  /**
   * What gradients are multiplied by to unscale them (the optimizers' `gradScale`): torch forms it as
   * `scale.double().reciprocal().float()`.
   */
  get inverseScale(): number {
    return this.enabled ? Math.fround(1 / this.currentScale) : 1;
  }

  /**
   * Ends an iteration: `foundInf` says whether any gradient held an inf/NaN. The update is
   * `_amp_update_scale_` exactly: products formed in double and rounded to f32 like the kernel's
   * `float * double` stored into a float.
   */
  update(foundInf: boolean): ScalerUpdate {
    if (!this.enabled) return { stepped: true, scale: 1 };
    if (foundInf) {
      this.currentScale = Math.fround(this.currentScale * this.backoffFactor);
      this.tracker = 0;
      return { stepped: false, scale: this.currentScale };
    }
    const successful = this.tracker + 1;
    if (successful === this.growthInterval) {
      const grown = Math.fround(this.currentScale * this.growthFactor);
      // Do not grow the scale past the f32 range (the kernel's isfinite check).
      if (Number.isFinite(grown)) this.currentScale = grown;
      this.tracker = 0;
    } else {
      this.tracker = successful;
    }
    return { stepped: true, scale: this.currentScale };
  }

  /** torch's update(new_scale): sets the scale (as f32); the growth tracker is left as it is. */
  setScale(newScale: number): void {
    if (!this.enabled) return;
    this.currentScale = Math.fround(finitePositive('newScale', newScale));
  }

  stateDict(): GradScalerState | Record<string, never> {
    if (!this.enabled) return {};
    return {
      scale: this.currentScale,
      growth_factor: this.growthFactor,
      backoff_factor: this.backoffFactor,
      growth_interval: this.growthInterval,
      _growth_tracker: this.tracker,
    };
  }

  loadStateDict(state: Partial<GradScalerState>): void {
    if (!this.enabled) return;
    const { scale, growth_factor: g, backoff_factor: b, growth_interval: n, _growth_tracker: t } = state;
    if (scale === undefined || g === undefined || b === undefined || n === undefined || t === undefined) {
      // torch raises on an empty dict (a state saved from a disabled scaler).
      throw invalid(
        'the state needs scale, growth_factor, backoff_factor, growth_interval and _growth_tracker',
      );
    }
    checkFactors(g, b, n);
    if (!Number.isSafeInteger(t) || t < 0) throw invalid(`_growth_tracker must be an integer >= 0, got ${t}`);
    this.currentScale = Math.fround(finitePositive('scale', scale));
    this.growthFactor = g;
    this.backoffFactor = b;
    this.growthInterval = n;
    this.tracker = t;
  }
}
