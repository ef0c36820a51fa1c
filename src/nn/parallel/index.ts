/**
 * Training over several devices: pipeline parallelism (a GPT split into stages, micro-batches
 * scheduled 1F1B or GPipe as one task graph) and the entry point for data-parallel / ZeRO-1 training.
 * Guide: docs/parallel.md.
 */
import { TandemError } from '../../core/errors.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { StepReport, TrainData, TrainSpec } from '../train.js';

export {
  PipelineTrainer,
  trainPipeline,
  type PassRecord,
  type PipelineOptions,
  type PipelineRunOptions,
} from './pipeline.js';
export { GptStage, evenSplit } from './gpt-stage.js';
export {
  SCHEDULE_KINDS,
  requireScheduleKind,
  scheduleOrders,
  simulateSchedule,
  stageOrder,
  submissionOrder,
  theoreticalBubble,
  type PipeOp,
  type ScheduleKind,
  type ScheduleSimulation,
  type ScheduledOp,
  type StageTimes,
} from './schedule.js';

export type ParallelMode = 'data' | 'zero1' | 'pipeline';
export const PARALLEL_MODES: readonly ParallelMode[] = ['data', 'zero1', 'pipeline'];

export interface DataParallelOptions {
  readonly devices: readonly string[];
  readonly mode: 'data' | 'zero1';
  readonly onStep?: (r: StepReport) => void;
  readonly signal?: AbortSignal;
}

/**
 * Data-parallel or ZeRO-1 training over `options.devices` (NCCL all-reduce of gradients in buckets
 * during the backward pass; ZeRO-1 shards the optimizer state).
 */
// DP-HOOK: wired at merge — the lead replaces this body with the data-parallel module's trainDataParallel.
export function runDataParallel(
  _rt: Runtime,
  _spec: TrainSpec,
  _data: TrainData,
  options: DataParallelOptions,
): Promise<{ finalLoss: number | null; steps: number }> {
  return Promise.reject(
    new TandemError(
      'TANDEM_ERR_UNSUPPORTED',
      `--parallel ${options.mode}: data-parallel training is not built into this version`,
    ),
  );
}
