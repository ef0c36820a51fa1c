/**
 * `tandem train <model>` and `tandem eval <model>` (declared in program-train.ts): the nn training loop
 * on the local devices with a live progress line on stderr (step, loss, throughput, MFU on GPUs, ETA) or
 * one JSON line per step with --json; checkpoints (safetensors) at intervals, at the end and on Ctrl-C;
 * --resume continues from the directory's checkpoint with the same next loss.
 */
import { join } from 'node:path';
import { TandemError } from '../core/errors.js';
import type { Runtime } from '../runtime/runtime.js';
import { latestCheckpoint, loadCheckpoint, prepareCheckpointDir, saveCheckpoint } from '../nn/checkpoint.js';
import { brownCorpusFor } from '../nn/data/corpus.js';
import { loadFashionMnist } from '../nn/data/idx.js';
import { gptConfig } from '../nn/models/gpt.js';
import { readTokenFile } from '../nn/data/tokens.js';
import { evaluateClassifier, evaluateGpt } from '../nn/evaluate.js';
import { Trainer, type ModelName, type StepReport, type TrainData, type TrainSpec } from '../nn/train.js';
import { OUTPUT_DIR, print, reportError } from './output.js';
import { openRuntime } from './runtime-commands.js';

export interface TrainOptions {
  readonly json?: boolean;
  readonly preset: string;
  readonly data?: string;
  readonly batch: number;
  readonly seqLen?: number;
  readonly precision: 'f32' | 'bf16' | 'fp16';
  readonly device?: string;
  readonly seed: number;
  readonly checkpoint?: string;
  readonly steps?: number;
  readonly lr?: number;
  readonly warmup?: number;
  readonly checkpointEvery?: number;
  readonly resume?: boolean;
  readonly sequences?: boolean;
  readonly staticStep?: boolean;
  readonly evalBatches: number;
  readonly gpus?: number;
  readonly parallel?: 'data' | 'zero1' | 'pipeline';
  readonly microBatches?: number;
  readonly schedule?: '1f1b' | 'gpipe';
}

const FASHION_DIR = '/usr/share/datasets/fashion-mnist';

export async function loadData(
  model: ModelName,
  data: string | undefined,
  preset?: string,
): Promise<TrainData> {
  if (model === 'gpt') {
    if (data === undefined || data === 'brown') {
      // A byte-level preset (gpt-micro) reads the corpus as bytes: GPT-2 ids are past its vocabulary.
      const vocab = preset === undefined ? 50257 : gptConfig(preset).vocab;
      const c = await brownCorpusFor(vocab, join(OUTPUT_DIR, 'data'));
      return { kind: 'tokens', train: c.train, val: c.val };
    }
    return { kind: 'tokens', train: readTokenFile(data) };
  }
  const sets = await loadFashionMnist(data ?? FASHION_DIR);
  return { kind: 'images', train: sets.train, test: sets.test };
}

export function specOf(model: ModelName, o: TrainOptions): TrainSpec {
  return {
    model,
    preset: o.preset,
    steps: o.steps ?? 1,
    batch: o.batch,
    ...(o.seqLen === undefined ? {} : { seqLen: o.seqLen }),
    precision: o.precision === 'fp16' ? 'f16' : o.precision,
    ...(o.device === undefined ? {} : { device: o.device }),
    ...(o.lr === undefined ? {} : { lr: o.lr }),
    warmupSteps: o.warmup ?? 0,
    seed: o.seed,
    ...(o.sequences === undefined ? {} : { sequences: o.sequences }),
    ...(o.staticStep === undefined ? {} : { staticStep: o.staticStep }),
  };
}

export function backendsFor(device: string | undefined): string[] | undefined {
  if (device === undefined) return undefined;
  return [...new Set(['cpu', device.replace(/\d+$/, '')])];
}

function duration(s: number): string {
  if (!Number.isFinite(s)) return '?';
  const m = Math.floor(s / 60);
  return m > 0 ? `${m}m${Math.round(s % 60)}s` : `${s.toFixed(0)}s`;
}

export function progressLine(r: StepReport, steps: number): string {
  const rate = r.throughput >= 1e3 ? `${(r.throughput / 1e3).toFixed(1)}k` : r.throughput.toFixed(0);
  const mfu = r.mfu === null ? '' : ` | MFU ${(r.mfu * 100).toFixed(1)}%`;
  const eta = duration(((steps - r.step) * r.stepMs) / 1000);
  return `step ${r.step}/${steps} | loss ${r.loss.toFixed(4)} | lr ${r.lr.toExponential(2)} | ${rate} ${r.unit}/s${mfu} | ETA ${eta}`;
}

/** What a train command's body gets from `trainFrame`. */
export interface TrainFrame {
  /** Aborted by Ctrl-C once `listen()` has been called: the run stops at its next step. */
  readonly signal: AbortSignal;
  /**
   * Called as the run starts: from then on Ctrl-C stops the run instead of ending the process (while
   * data and devices load it ends the process as usual).
   */
  listen(): void;
  /** Opens the runtime, which the frame closes at the end. */
  open(options: Parameters<typeof openRuntime>[0]): Promise<Runtime>;
}

/**
 * Runs a train or eval command's body: an error becomes its report and exit code, and the Ctrl-C
 * handler and the runtime are released however the body ends.
 */
export async function trainFrame(json: boolean, body: (f: TrainFrame) => Promise<number>): Promise<number> {
  const abort = new AbortController();
  const onSigint = (): void => abort.abort();
  const runtimes: Runtime[] = [];
  try {
    return await body({
      signal: abort.signal,
      listen: () => void process.on('SIGINT', onSigint),
      open: async (options) => {
        const rt = await openRuntime(options);
        runtimes.push(rt);
        return rt;
      },
    });
  } catch (e) {
    return reportError(e, json);
  } finally {
    process.off('SIGINT', onSigint);
    for (const rt of runtimes) await rt.close();
  }
}

/**
 * Shows each step of a run: a JSON line on stdout with --json, else on stderr a progress line rewritten
 * in place on a terminal, or one every 10 steps (and the last) otherwise. `end()` after the run.
 */
export function stepProgress(json: boolean, steps: number): { step(r: StepReport): void; end(): void } {
  const tty = process.stderr.isTTY === true && !json;
  return {
    step: (r) => {
      if (json) process.stdout.write(`${JSON.stringify({ event: 'step', ...r })}\n`);
      else if (tty) process.stderr.write(`\r${progressLine(r, steps)}\x1b[K`);
      else if (r.step % 10 === 0 || r.step === steps) process.stderr.write(`${progressLine(r, steps)}\n`);
    },
    end: () => {
      if (tty) process.stderr.write('\n');
    },
  };
}

async function evaluate(trainer: Trainer, data: TrainData, batches: number): Promise<Record<string, number>> {
  if (batches === 0) return {};
  const b = trainer.built;
  if (b.kind === 'gpt' && data.kind === 'tokens' && data.val !== undefined) {
    const t = trainer.spec.seqLen ?? b.model.config.context;
    return { valLoss: await evaluateGpt(trainer.nn, b.model, data.val, trainer.spec.batch, t, batches) };
  }
  if (b.kind === 'classifier' && data.kind === 'images' && data.test !== undefined) {
    const s = await evaluateClassifier(trainer.nn, b.model, data.test, 1000);
    return { testAccuracy: s.accuracy, testLoss: s.loss };
  }
  return {};
}

export async function trainCommand(model: string, o: TrainOptions): Promise<number> {
  const json = o.json === true;
  return trainFrame(json, async (f) => {
    const data = await loadData(model as ModelName, o.data, o.preset);
    const rt = await f.open({
      ...(backendsFor(o.device) ? { backends: backendsFor(o.device)! } : {}),
      summary: !json,
    });
    const trainer = new Trainer(rt, specOf(model as ModelName, o), data);
    let from = 0;
    if (o.resume) {
      if (o.checkpoint === undefined)
        throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', '--resume needs --checkpoint <dir>');
      const file = latestCheckpoint(o.checkpoint);
      if (file === null)
        throw new TandemError('TANDEM_ERR_BAD_CHECKPOINT', `no checkpoint in ${o.checkpoint} to resume from`);
      from = await loadCheckpoint(trainer, file);
      if (!json) process.stderr.write(`resuming from ${file} at step ${from}\n`);
    }
    if (o.checkpoint !== undefined) prepareCheckpointDir(o.checkpoint);
    const every = o.checkpointEvery ?? 0;
    const progress = stepProgress(json, trainer.spec.steps);
    f.listen();
    let saved = from;
    const last = await trainer.run(
      (r) => progress.step(r),
      f.signal,
      from,
      async (step) => {
        if (o.checkpoint !== undefined && every > 0 && step % every === 0) {
          await saveCheckpoint(trainer, o.checkpoint, step);
          saved = step;
        }
      },
    );
    progress.end();
    const done = last?.step ?? from;
    if (o.checkpoint !== undefined && done > saved) await saveCheckpoint(trainer, o.checkpoint, done);
    const scores = await evaluate(trainer, data, o.evalBatches);
    const summary = {
      event: 'done',
      model,
      steps: done,
      stopped: f.signal.aborted,
      loss: last?.loss ?? null,
      throughput: last?.throughput ?? null,
      unit: last?.unit ?? null,
      ...scores,
      ...(o.checkpoint === undefined ? {} : { checkpoint: o.checkpoint }),
    };
    print(json, summary, () =>
      [
        `${f.signal.aborted ? 'stopped' : 'trained'} ${model} for ${done} steps: loss ${summary.loss?.toFixed(4) ?? '-'}`,
        ...Object.entries(scores).map(
          ([k, v]) => `${k} ${k.includes('Accuracy') ? `${(v * 100).toFixed(2)} %` : v.toFixed(4)}`,
        ),
        ...(o.checkpoint === undefined ? [] : [`checkpoint in ${o.checkpoint}`]),
      ].join('\n'),
    );
    return 0;
  });
}

export async function evalCommand(model: string, o: TrainOptions): Promise<number> {
  const json = o.json === true;
  return trainFrame(json, async (f) => {
    if (o.checkpoint === undefined)
      throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', 'eval needs --checkpoint <dir>');
    const file = latestCheckpoint(o.checkpoint);
    if (file === null) throw new TandemError('TANDEM_ERR_BAD_CHECKPOINT', `no checkpoint in ${o.checkpoint}`);
    const data = await loadData(model as ModelName, o.data, o.preset);
    const rt = await f.open({
      ...(backendsFor(o.device) ? { backends: backendsFor(o.device)! } : {}),
      summary: !json,
    });
    const trainer = new Trainer(rt, specOf(model as ModelName, o), data);
    const step = await loadCheckpoint(trainer, file);
    const scores = await evaluate(trainer, data, o.evalBatches);
    print(json, { model, checkpoint: file, step, ...scores }, () =>
      [
        `${model} at step ${step} (${file})`,
        ...Object.entries(scores).map(([k, v]) => `${k} ${v.toFixed(4)}`),
      ].join('\n'),
    );
    return 0;
  });
}
