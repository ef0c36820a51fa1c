/**
 * Training over several devices: pipeline parallelism (a GPT split into stages, micro-batches
 * scheduled 1F1B or GPipe as one task graph), data parallelism with bucketed all-reduce overlapped with
 * the backward pass, and ZeRO-1 (sharded optimizer state).
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
export {
  AllReduceGrads,
  BUCKET_BYTES,
  DATA_PARALLEL_MODES,
  planBuckets,
  rankDevice,
  Replicas,
  runReplicas,
  type Bucket,
  type DataParallelMode,
  type GradReduction,
  type ReplicaOptions,
} from './data-parallel.js';
export { Zero1 } from './zero1.js';
export { buildReplicas, trainDataParallel } from './train-data-parallel.js';
