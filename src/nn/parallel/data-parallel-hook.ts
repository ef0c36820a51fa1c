/**
 * The one place pipeline-side code reaches data-parallel / ZeRO-1 training (NCCL all-reduce of
 * gradients in buckets during the backward pass; ZeRO-1 shards the optimizer state). That training
 * lives in data-parallel.ts / zero1.ts, built on another branch.
 */
import { TandemError } from '../../core/errors.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { StepReport, TrainData, TrainSpec } from '../train.js';

export interface DataParallelOptions {
  readonly devices: readonly string[];
  readonly mode: 'data' | 'zero1';
  readonly onStep?: (r: StepReport) => void;
  readonly signal?: AbortSignal;
}

// DP-HOOK: wired at merge — the lead replaces this body with a call to the data-parallel module's
// trainDataParallel(rt, spec, data, { devices, mode, onStep, signal }).
export function runDataParallel(
  _rt: Runtime,
  _spec: TrainSpec,
  _data: TrainData,
  options: DataParallelOptions,
): Promise<{ finalLoss: number | null; steps: number }> {
  return Promise.reject(
    new TandemError(
      'TANDEM_ERR_UNSUPPORTED',
      `parallel ${options.mode}: data-parallel training is not built into this version`,
    ),
  );
}
