/**
 * `train`: a deep-learning training run as a service job (src/nn). Data are named data sets the server
 * holds (Fashion-MNIST from Debian, the Brown corpus) — a tenant never names a server path. Progress is
 * the step and loss; each step is a span on the job's timeline (its loss and throughput in the args, the
 * dashboard's loss curve); checkpoints go to <data dir>/checkpoints/<job id> at intervals and when the
 * job is cancelled or stopped at its deadline, so the last one is kept. Cancellation takes effect at the
 * next step boundary.
 */
import { basename, join } from 'node:path';
import { TandemError, withPathHidden } from '../../../core/errors.js';
import type { Runtime } from '../../../runtime/runtime.js';
import { latestCheckpoint, loadCheckpoint, saveCheckpoint } from '../../../nn/checkpoint.js';
import { brownCorpusFor } from '../../../nn/data/corpus.js';
import { loadFashionMnist } from '../../../nn/data/idx.js';
import { GPT_PRESETS, gptConfig } from '../../../nn/models/gpt.js';
import { gptMemoryPlan, planBytes } from '../../../nn/memory.js';
import {
  MAX_GPUS,
  PARALLEL_MODES,
  pickGpus,
  planParallel,
  trainParallel,
  type ParallelMode,
} from '../../../nn/parallel/plan.js';
import { SCHEDULE_KINDS, type ScheduleKind } from '../../../nn/parallel/schedule.js';
import {
  Trainer,
  type ModelName,
  type StepReport,
  type TrainData,
  type TrainSpec,
} from '../../../nn/train.js';
import { defineJobType, type AnyJobType } from '../job-type.js';
import { requireRuntime } from './task-helpers.js';

export interface TrainParams {
  readonly model: ModelName;
  readonly preset: string;
  readonly dataset: 'fashion-mnist' | 'brown';
  readonly steps: number;
  readonly batch: number;
  readonly seqLen?: number;
  readonly precision: 'f32' | 'bf16' | 'f16';
  readonly device: string;
  readonly lr?: number;
  readonly warmupSteps: number;
  readonly seed: number;
  readonly checkpointEvery: number;
  /** Continue from the checkpoint of this earlier train job (same tenant). */
  readonly resumeFrom?: string;
  /** GPUs the run holds (the first `gpus` CUDA devices); 2 or more train with `parallel`. */
  readonly gpus: number;
  readonly parallel?: ParallelMode;
  /** pipeline: micro-batches per step (default 4 per GPU). */
  readonly microBatches?: number;
  readonly schedule?: ScheduleKind;
  /** Each pass's kernels as a few runtime sequence tasks (TrainSpec.sequences; default by model and device). */
  readonly sequences?: boolean;
  /** Record the first step and replay it (TrainSpec.staticStep; one GPU; fp16's loss scale on the device). */
  readonly staticStep?: boolean;
}

const FASHION_DIR = '/usr/share/datasets/fashion-mnist';

export function trainJob(dataDir: string): AnyJobType {
  const checkpointDir = (jobId: string): string => join(dataDir, 'checkpoints', jobId);
  return defineJobType<TrainParams>({
    name: 'train',
    description:
      'Trains a model (mlp or cnn on Fashion-MNIST, gpt on the Brown corpus) with AdamW; progress is the step and loss, checkpoints are kept.',
    paramsSchema: {
      type: 'object',
      additionalProperties: false,
      required: ['model'],
      properties: {
        model: { type: 'string', enum: ['mlp', 'cnn', 'gpt'] },
        preset: {
          type: 'string',
          enum: Object.keys(GPT_PRESETS),
          default: 'gpt-mini',
          description: 'gpt only',
        },
        dataset: {
          type: 'string',
          enum: ['fashion-mnist', 'brown'],
          description: 'default: fashion-mnist for mlp/cnn, brown for gpt',
        },
        steps: { type: 'integer', minimum: 1, maximum: 10_000_000, default: 100 },
        batch: { type: 'integer', minimum: 1, maximum: 65_536, default: 64 },
        seqLen: { type: 'integer', minimum: 1, maximum: 65_536 },
        precision: { type: 'string', enum: ['f32', 'bf16', 'f16'], default: 'f32' },
        device: { type: 'string', default: 'auto', description: 'auto, cpu, cuda, webgpu or a device id' },
        lr: { type: 'number', exclusiveMinimum: 0, maximum: 10 },
        sequences: {
          type: 'boolean',
          description:
            "each pass's kernels as a few runtime sequence tasks, less host work per step (default: on for gpt on a CUDA device, else off)",
        },
        staticStep: {
          type: 'boolean',
          description:
            'record the first step and replay it for every later one (a CUDA graph on a GPU; one device, bf16 or f32, no dropout; default: on for mlp and cnn on a CUDA device, else off)',
        },
        warmupSteps: { type: 'integer', minimum: 0, default: 0 },
        seed: { type: 'integer', minimum: 0, maximum: 2147483647, default: 1 },
        checkpointEvery: {
          type: 'integer',
          minimum: 0,
          default: 0,
          description: 'steps between checkpoints (0: only at the end and on cancel)',
        },
        resumeFrom: {
          type: 'string',
          maxLength: 64,
          pattern: '^[A-Za-z0-9_-]+$',
          description: 'the id of an earlier train job to continue',
        },
        gpus: {
          type: 'integer',
          minimum: 1,
          maximum: MAX_GPUS,
          default: 1,
          description: 'GPUs the run holds (the first n CUDA devices); 2 or more train with parallel',
        },
        parallel: {
          type: 'string',
          enum: [...PARALLEL_MODES],
          description: 'with gpus ≥ 2 (default data): data, zero1 or pipeline (gpt only)',
        },
        microBatches: {
          type: 'integer',
          minimum: 1,
          maximum: 65_536,
          description: 'pipeline: micro-batches per step, dividing batch (default 4 per GPU)',
        },
        schedule: {
          type: 'string',
          enum: [...SCHEDULE_KINDS],
          default: '1f1b',
          description: 'pipeline only',
        },
      },
    },
    parse(raw) {
      const model = raw['model'] as ModelName;
      const dataset =
        (raw['dataset'] as TrainParams['dataset'] | undefined) ??
        (model === 'gpt' ? 'brown' : 'fashion-mnist');
      if ((model === 'gpt') !== (dataset === 'brown'))
        throw new TandemError(
          'TANDEM_ERR_INVALID_ARGUMENT',
          `train: model ${model} cannot train on ${dataset}`,
        );
      const preset = String(raw['preset'] ?? 'gpt-mini');
      if (model === 'gpt') {
        const c = gptConfig(preset);
        const seqLen = raw['seqLen'] as number | undefined;
        if (seqLen !== undefined && seqLen > c.context)
          throw new TandemError(
            'TANDEM_ERR_INVALID_ARGUMENT',
            `train: seqLen ${seqLen} exceeds the ${preset} context of ${c.context}`,
          );
      }
      const gpus = Number(raw['gpus'] ?? 1);
      const device = String(raw['device'] ?? 'auto');
      const precision = (raw['precision'] as TrainParams['precision'] | undefined) ?? 'f32';
      const batch = Number(raw['batch'] ?? 64);
      const plan = planParallel(
        {
          gpus,
          ...(raw['parallel'] === undefined ? {} : { parallel: String(raw['parallel']) }),
          ...(raw['microBatches'] === undefined ? {} : { microBatches: Number(raw['microBatches']) }),
          ...(raw['schedule'] === undefined ? {} : { schedule: String(raw['schedule']) }),
        },
        { model, preset, batch, precision, ...(raw['staticStep'] === true ? { staticStep: true } : {}) },
      );
      if (plan !== null) {
        if (device !== 'auto' && device !== 'cuda')
          throw new TandemError(
            'TANDEM_ERR_INVALID_ARGUMENT',
            `train: device ${device} with gpus ${gpus}: the job takes the first ${gpus} GPUs (device auto or cuda)`,
          );
        if (raw['resumeFrom'] !== undefined || Number(raw['checkpointEvery'] ?? 0) > 0)
          throw new TandemError(
            'TANDEM_ERR_UNSUPPORTED',
            'train: checkpoints (checkpointEvery, resumeFrom) are not kept by runs over several GPUs yet',
          );
      }
      return {
        model,
        preset,
        dataset,
        gpus,
        ...(plan === null
          ? {}
          : { parallel: plan.mode, microBatches: plan.microBatches, schedule: plan.schedule }),
        steps: Number(raw['steps'] ?? 100),
        batch: Number(raw['batch'] ?? 64),
        ...(raw['seqLen'] === undefined ? {} : { seqLen: Number(raw['seqLen']) }),
        precision: (raw['precision'] as TrainParams['precision'] | undefined) ?? 'f32',
        device: String(raw['device'] ?? 'auto'),
        ...(raw['lr'] === undefined ? {} : { lr: Number(raw['lr']) }),
        ...(raw['sequences'] === undefined ? {} : { sequences: raw['sequences'] === true }),
        ...(raw['staticStep'] === undefined ? {} : { staticStep: raw['staticStep'] === true }),
        warmupSteps: Number(raw['warmupSteps'] ?? 0),
        seed: Number(raw['seed'] ?? 1),
        checkpointEvery: Number(raw['checkpointEvery'] ?? 0),
        ...(raw['resumeFrom'] === undefined ? {} : { resumeFrom: String(raw['resumeFrom']) }),
      };
    },
    memoryBytes(p) {
      // Data parallel and ZeRO-1 hold a replica (and a batch) on every GPU; a pipeline splits one model.
      const copies = p.gpus > 1 && p.parallel !== 'pipeline' ? p.gpus : 1;
      if (p.model !== 'gpt') return copies * (64 * 2 ** 20 + p.batch * 200_000);
      const c = gptConfig(p.preset);
      return copies * planBytes(gptMemoryPlan(c, p.precision, p.seqLen ?? c.context), p.batch);
    },
    jobClass: () => 'training',
    defaultTimeoutSeconds: 6 * 3600,
    requestedDevice: (p) => (p.gpus > 1 ? 'cuda' : p.device === 'auto' ? undefined : p.device),
    requestedDeviceCount: (p) => p.gpus,
    async run(ctx) {
      const rt = requireRuntime(ctx) as unknown as Runtime;
      const p = ctx.params;
      const device = p.device === 'auto' ? ctx.placement.device : p.device;
      const data: TrainData =
        p.dataset === 'brown'
          ? await (async () => {
              // A byte-level preset (gpt-micro) reads the corpus as bytes: GPT-2 ids are past its vocabulary.
              const c = await brownCorpusFor(gptConfig(p.preset).vocab, join(dataDir, 'datasets'));
              return { kind: 'tokens' as const, train: c.train, val: c.val };
            })()
          : await (async () => {
              const s = await loadFashionMnist(FASHION_DIR);
              return { kind: 'images' as const, train: s.train, test: s.test };
            })();
      const spec: TrainSpec = {
        model: p.model,
        preset: p.preset,
        steps: p.steps,
        batch: p.batch,
        ...(p.seqLen === undefined ? {} : { seqLen: p.seqLen }),
        precision: p.precision,
        ...(device === undefined ? {} : { device }),
        ...(p.lr === undefined ? {} : { lr: p.lr }),
        ...(p.sequences === undefined ? {} : { sequences: p.sequences }),
        ...(p.staticStep === undefined ? {} : { staticStep: p.staticStep }),
        warmupSteps: p.warmupSteps,
        seed: p.seed,
        tags: ctx.tags,
      };
      const report = (r: StepReport): void => {
        const end = Date.now() * 1000;
        ctx.span('step', end - r.stepMs * 1000, end, {
          step: r.step,
          loss: r.loss,
          throughput: r.throughput,
          unit: r.unit,
        });
        ctx.progress(r.step / p.steps, `step ${r.step}/${p.steps} loss ${r.loss.toFixed(4)}`);
        ctx.trainingStep?.({
          model: p.model,
          step: r.step,
          loss: r.loss,
          seconds: r.stepMs / 1000,
          throughput: r.throughput,
          unit: r.unit,
        });
      };
      if (p.gpus > 1) return runOnGpus(rt, spec, data, p, ctx.signal, report);
      const trainer = new Trainer(rt, spec, data);
      const dir = checkpointDir(ctx.jobId);
      let from = 0;
      if (p.resumeFrom !== undefined) {
        const file = latestCheckpoint(checkpointDir(p.resumeFrom));
        if (file === null)
          throw new TandemError(
            'TANDEM_ERR_NOT_FOUND',
            `train: job ${p.resumeFrom} left no checkpoint to resume from`,
          );
        from = await loadCheckpoint(trainer, file).catch((e: unknown) => {
          throw e instanceof TandemError
            ? withPathHidden(e, file, `the checkpoint of job ${p.resumeFrom} (${basename(file)})`)
            : e;
        });
      }
      let saved = from;
      let lastLoss: number | null = null;
      const last = await trainer.run(
        (r) => {
          lastLoss = r.loss;
          report(r);
        },
        ctx.signal,
        from,
        async (step) => {
          if (p.checkpointEvery > 0 && step % p.checkpointEvery === 0) {
            await saveCheckpoint(trainer, dir, step);
            saved = step;
          }
        },
      );
      // At the end, and when cancelled at a step boundary: the last step's weights are kept.
      const done = trainer.stepsDone;
      let checkpoint: string | null = null;
      if (done > saved) checkpoint = await saveCheckpoint(trainer, dir, done);
      if (ctx.signal.aborted)
        throw new TandemError('TANDEM_ERR_CANCELLED', `cancelled at step ${done}; checkpoint kept`, {
          step: done,
          checkpoint,
        });
      return {
        steps: done,
        loss: last?.loss ?? lastLoss,
        throughput: last?.throughput ?? null,
        unit: last?.unit ?? null,
        checkpoint: latestCheckpoint(dir),
      };
    },
  });
}

/** A run over `p.gpus` GPUs (validated again here: the devices may have changed since the submit). */
async function runOnGpus(
  rt: Runtime,
  spec: TrainSpec,
  data: TrainData,
  p: TrainParams,
  signal: AbortSignal,
  report: (r: StepReport) => void,
): Promise<Record<string, unknown>> {
  const plan = planParallel(
    {
      gpus: p.gpus,
      ...(p.parallel === undefined ? {} : { parallel: p.parallel }),
      ...(p.microBatches === undefined ? {} : { microBatches: p.microBatches }),
      ...(p.schedule === undefined ? {} : { schedule: p.schedule }),
    },
    spec,
  )!;
  const devices = pickGpus(rt.devices, plan.gpus);
  let last: StepReport | null = null;
  const { device: _unused, ...rest } = spec;
  const result = await trainParallel(rt, rest, data, plan, devices, {
    signal,
    onStep: (r) => {
      last = r;
      report(r);
    },
  });
  if (signal.aborted)
    throw new TandemError('TANDEM_ERR_CANCELLED', `cancelled at step ${result.steps}`, {
      step: result.steps,
    });
  const final = last as StepReport | null;
  return {
    steps: result.steps,
    loss: result.finalLoss,
    throughput: final?.throughput ?? null,
    unit: final?.unit ?? null,
    parallel: plan.mode,
    devices,
    ...(plan.mode === 'pipeline' ? { microBatches: plan.microBatches, schedule: plan.schedule } : {}),
    checkpoint: null,
  };
}
