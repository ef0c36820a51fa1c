/**
 * What `tandem train --gpus N --parallel MODE` and the service's `train` job share: checking a
 * multi-device request before anything is built (clear TANDEM_ERR_* codes), choosing the GPUs, and
 * dispatching to pipeline or data-parallel training.
 */
import { TandemError } from '../../core/errors.js';
import type { Runtime } from '../../runtime/runtime.js';
import { gptConfig } from '../models/gpt.js';
import type { StepReport, TrainData, TrainSpec } from '../train.js';
import { trainDataParallel } from './train-data-parallel.js';
import { trainPipeline } from './pipeline.js';
import { type ScheduleKind, requireScheduleKind } from './schedule.js';

export type ParallelMode = 'data' | 'zero1' | 'pipeline';
export const PARALLEL_MODES: readonly ParallelMode[] = ['data', 'zero1', 'pipeline'];
/** Most GPUs one training run asks for (one host). */
export const MAX_GPUS = 16;

export interface ParallelRequest {
  readonly gpus: number;
  readonly parallel?: string;
  /** Pipeline: micro-batches per step (default 4 per stage). */
  readonly microBatches?: number;
  readonly schedule?: string;
}

export interface ParallelPlan {
  readonly mode: ParallelMode;
  readonly gpus: number;
  readonly microBatches: number;
  readonly schedule: ScheduleKind;
}

const bad = (message: string, details?: Record<string, unknown>): TandemError =>
  new TandemError('TANDEM_ERR_INVALID_ARGUMENT', message, details);

/**
 * The plan for a request, or null for ordinary one-device training (one GPU, no mode). Throws on a
 * request that cannot run: a mode without several GPUs, pipeline for a model that is not a GPT, more
 * stages than layers, micro-batches that do not divide the batch, f16 in a pipeline, a recorded step.
 */
export function planParallel(
  req: ParallelRequest,
  spec: Pick<TrainSpec, 'model' | 'preset' | 'gpt' | 'batch' | 'precision' | 'staticStep'>,
): ParallelPlan | null {
  const { gpus } = req;
  if (!Number.isInteger(gpus) || gpus < 1 || gpus > MAX_GPUS)
    throw bad(`gpus must be an integer in 1..${MAX_GPUS}, got ${gpus}`);
  if (req.parallel !== undefined && !(PARALLEL_MODES as readonly string[]).includes(req.parallel))
    throw bad(
      `unknown parallel mode ${JSON.stringify(req.parallel)}; expected one of ${PARALLEL_MODES.join(', ')}`,
    );
  if (gpus === 1) {
    if (req.parallel !== undefined)
      throw bad(`parallel ${req.parallel} needs at least 2 GPUs (gpus is 1)`, {
        gpus,
        parallel: req.parallel,
      });
    return null;
  }
  // Replicas and stages are driven step by step (all-reduces during the backward, micro-batches).
  if (spec.staticStep === true)
    throw new TandemError(
      'TANDEM_ERR_UNSUPPORTED',
      `a recorded step (staticStep) runs on one device, not ${gpus}`,
      {
        gpus,
      },
    );
  const mode = (req.parallel ?? 'data') as ParallelMode;
  const schedule = requireScheduleKind(req.schedule ?? '1f1b');
  const microBatches = req.microBatches ?? 4 * gpus;
  if (mode === 'pipeline') {
    if (spec.model !== 'gpt')
      throw new TandemError(
        'TANDEM_ERR_UNSUPPORTED',
        `parallel pipeline splits a gpt into stages, not ${spec.model}`,
      );
    const layers = gptConfig(spec.preset ?? 'gpt-mini', spec.gpt).layers;
    if (gpus > layers)
      throw bad(
        `parallel pipeline: ${gpus} stages for a model of ${layers} layers; each stage needs at least one layer`,
        {
          gpus,
          layers,
        },
      );
    if (!Number.isInteger(microBatches) || microBatches < 1 || spec.batch % microBatches !== 0)
      throw bad(`parallel pipeline: ${microBatches} micro-batches do not divide the batch of ${spec.batch}`, {
        batch: spec.batch,
        microBatches,
      });
    if (spec.precision === 'f16')
      throw new TandemError(
        'TANDEM_ERR_UNSUPPORTED',
        'parallel pipeline: f16 (loss scaling) is not supported; use bf16 or f32',
      );
  }
  return { mode, gpus, microBatches, schedule };
}

/** The first `n` GPUs of the runtime, or TANDEM_ERR_DEVICE_ABSENT naming what is there. */
export function pickGpus(
  devices: readonly { readonly info: { readonly id: string; readonly kind: string } }[],
  n: number,
): string[] {
  const gpus = devices.filter((d) => d.info.kind === 'cuda').map((d) => d.info.id);
  if (gpus.length < n)
    throw new TandemError(
      'TANDEM_ERR_DEVICE_ABSENT',
      `the run asks for ${n} GPUs; this machine has ${gpus.length}${gpus.length > 0 ? ` (${gpus.join(', ')})` : ''}`,
      { requested: n, gpus },
    );
  return gpus.slice(0, n);
}

export interface ParallelRunOptions {
  readonly onStep?: (r: StepReport) => void;
  readonly signal?: AbortSignal;
}

/** Runs `spec` over `devices` as `plan` says. */
export function trainParallel(
  rt: Runtime,
  spec: TrainSpec,
  data: TrainData,
  plan: ParallelPlan,
  devices: readonly string[],
  options: ParallelRunOptions = {},
): Promise<{ finalLoss: number | null; steps: number }> {
  const common = {
    devices,
    ...(options.onStep === undefined ? {} : { onStep: options.onStep }),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  };
  if (plan.mode === 'pipeline')
    return trainPipeline(rt, spec, data, {
      ...common,
      microBatches: plan.microBatches,
      schedule: plan.schedule,
    });
  return trainDataParallel(rt, spec, data, { ...common, mode: plan.mode });
}
