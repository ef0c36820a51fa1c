/**
 * Training over several devices: pipeline parallelism (a GPT split into stages, micro-batches
 * scheduled 1F1B or GPipe as one task graph) and the entry point for data-parallel / ZeRO-1 training.
 * Guide: docs/parallel.md.
 */
export {
  PipelineTrainer,
  trainPipeline,
  type PassRecord,
  type PipelineOptions,
  type PipelineRunOptions,
} from './pipeline.js';
export { GptStage, balancedSplit, evenSplit } from './gpt-stage.js';
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

export {
  MAX_GPUS,
  PARALLEL_MODES,
  pickGpus,
  planParallel,
  trainParallel,
  type ParallelMode,
  type ParallelPlan,
  type ParallelRequest,
  type ParallelRunOptions,
} from './plan.js';
export { runDataParallel, type DataParallelOptions } from './data-parallel-hook.js';
