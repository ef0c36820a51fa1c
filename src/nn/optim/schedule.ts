/** Learning-rate schedules: linear warm-up, then cosine decay to a floor (nanoGPT's get_lr). */
import { TandemError } from '../../core/errors.js';

export interface CosineSchedule {
  readonly maxLr: number;
  readonly minLr?: number;
  readonly warmupSteps?: number;
  readonly totalSteps: number;
}

/** lr for step `it` (from 0). */
export function cosineWithWarmup(s: CosineSchedule): (it: number) => number {
  const min = s.minLr ?? s.maxLr * 0.1;
  const warm = s.warmupSteps ?? 0;
  if (!(s.maxLr > 0) || !(s.totalSteps > 0) || warm < 0 || min < 0 || min > s.maxLr)
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      'cosineWithWarmup: needs maxLr > 0, totalSteps > 0, 0 ≤ minLr ≤ maxLr',
    );
  return (it) => {
    if (it < warm) return (s.maxLr * (it + 1)) / warm;
    if (it >= s.totalSteps) return min;
    const ratio = (it - warm) / Math.max(1, s.totalSteps - warm);
    return min + 0.5 * (1 + Math.cos(Math.PI * ratio)) * (s.maxLr - min);
  };
}
