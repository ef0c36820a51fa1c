/**
 * The training loop shared by `tandem train`, the service's `train` job and library users: builds the
 * model, optimizer and data from a spec, runs steps (the forward, backward and update of a step are
 * submitted as one task graph; the loss of step k is read while step k + 1 is queued, so the devices
 * never wait for the host between steps), reports progress, stops on NaN, on a signal, or at the end.
 */
import { TandemError } from '../core/errors.js';
import type { Runtime } from '../runtime/runtime.js';
import { Nn, type Precision } from './context.js';
import { type ImageSet, imageBatch } from './data/images.js';
import { TokenLoader } from './data/tokens.js';
import { Cnn, Mlp, type Classifier } from './models/classifiers.js';
import { Gpt, gptConfig, gptFlopsPerToken } from './models/gpt.js';
import { AdamW } from './optim/adamw.js';
import { cosineWithWarmup } from './optim/schedule.js';
import type { Var } from './var.js';

export type ModelName = 'mlp' | 'cnn' | 'gpt';

export interface TrainSpec {
  readonly model: ModelName;
  /** GPT preset (gpt2, gpt-mini, gpt-micro, …). */
  readonly preset?: string;
  readonly steps: number;
  readonly batch: number;
  /** Sequence length for GPT (default: the preset's context). */
  readonly seqLen?: number;
  readonly precision?: Precision;
  readonly device?: string;
  readonly lr?: number;
  readonly warmupSteps?: number;
  readonly weightDecay?: number;
  readonly maxNorm?: number;
  readonly seed?: number;
}

export interface StepReport {
  readonly step: number;
  readonly loss: number;
  readonly lr: number;
  /** Samples (images or tokens) per second over the last step. */
  readonly throughput: number;
  readonly unit: 'images' | 'tokens';
  readonly stepMs: number;
  /** Model FLOP utilisation against the device's bf16/f32 peak (GPT on GPUs), when known. */
  readonly mfu: number | null;
}

export type TrainData =
  | { readonly kind: 'images'; readonly train: ImageSet; readonly test?: ImageSet }
  | { readonly kind: 'tokens'; readonly train: ArrayLike<number>; readonly val?: ArrayLike<number> };

type Built =
  { readonly kind: 'classifier'; readonly model: Classifier } | { readonly kind: 'gpt'; readonly model: Gpt };

export function buildModel(nn: Nn, spec: Pick<TrainSpec, 'model' | 'preset'>): Built {
  switch (spec.model) {
    case 'mlp':
      return { kind: 'classifier', model: new Mlp(nn) };
    case 'cnn':
      return { kind: 'classifier', model: new Cnn(nn) };
    case 'gpt':
      return { kind: 'gpt', model: new Gpt(nn, gptConfig(spec.preset ?? 'gpt-mini')) };
    default:
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `unknown model ${JSON.stringify(spec.model)}; known: mlp, cnn, gpt`,
      );
  }
}

export class Trainer {
  readonly nn: Nn;
  readonly built: Built;
  readonly optimizer: AdamW;
  readonly step0: number;
  private readonly lrAt: (it: number) => number;
  private readonly tokens: TokenLoader | null;
  private imageIndex = 0;

  constructor(
    readonly rt: Runtime,
    readonly spec: TrainSpec,
    readonly data: TrainData,
  ) {
    if (!Number.isInteger(spec.steps) || spec.steps < 1)
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `train: steps must be a positive integer, got ${spec.steps}`,
      );
    if (!Number.isInteger(spec.batch) || spec.batch < 1)
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `train: batch must be a positive integer, got ${spec.batch}`,
      );
    this.nn = new Nn(rt, {
      precision: spec.precision ?? 'f32',
      seed: spec.seed ?? 1,
      ...(spec.device === undefined ? {} : { device: spec.device }),
    });
    this.built = buildModel(this.nn, spec);
    const isGpt = this.built.kind === 'gpt';
    if (isGpt !== (data.kind === 'tokens'))
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `train: model ${spec.model} needs ${isGpt ? 'token' : 'image'} data`,
      );
    const lr = spec.lr ?? (isGpt ? 6e-4 : 1e-3);
    this.optimizer = new AdamW(this.nn, this.built.model.parameters(), {
      lr,
      beta1: 0.9,
      beta2: isGpt ? 0.95 : 0.999,
      weightDecay: spec.weightDecay ?? (isGpt ? 0.1 : 0.01),
      decayMatricesOnly: isGpt,
      maxNorm: spec.maxNorm ?? (isGpt ? 1 : 0),
    });
    this.lrAt = cosineWithWarmup({
      maxLr: lr,
      minLr: lr * 0.1,
      warmupSteps: spec.warmupSteps ?? 0,
      totalSteps: spec.steps,
    });
    this.step0 = 0;
    if (data.kind === 'tokens' && this.built.kind === 'gpt') {
      const c = this.built.model.config;
      this.tokens = new TokenLoader(data.train, {
        batch: spec.batch,
        time: spec.seqLen ?? c.context,
        seed: spec.seed ?? 1,
        vocab: c.vocab,
      });
    } else {
      this.tokens = null;
      if (data.kind === 'images' && data.train.count < spec.batch)
        throw new TandemError(
          'TANDEM_ERR_BAD_DATA',
          `train: the data set has ${data.train.count} images, fewer than one batch of ${spec.batch}`,
        );
    }
  }

  get samplesPerStep(): number {
    return this.tokens === null ? this.spec.batch : this.spec.batch * this.tokens.options.time;
  }

  /** Submits one step's forward, backward and update; returns its loss (not yet computed). */
  submitStep(): Var {
    const nn = this.nn;
    let loss: Var;
    if (this.built.kind === 'gpt') {
      const b = this.tokens!.next();
      const t = this.tokens!.options.time;
      const ids = nn.input(b.inputs, [this.spec.batch, t], 'i32');
      const targets = nn.input(b.targets, [this.spec.batch * t], 'i32');
      loss = this.built.model.loss(ids, targets);
      this.freeAfterStep(ids, targets);
    } else {
      const set = (this.data as { train: ImageSet }).train;
      const batch = imageBatch(set, this.spec.batch, this.imageIndex++, this.spec.seed ?? 1);
      const x = nn.input(batch.images, [this.spec.batch, 1, set.height, set.width]);
      const y = nn.input(batch.labels, [this.spec.batch], 'i32');
      loss = this.built.model.loss(x, y);
      this.freeAfterStep(x, y);
    }
    return loss;
  }

  private pendingInputs: Var[] = [];

  private freeAfterStep(...inputs: Var[]): void {
    this.pendingInputs.push(...inputs);
  }

  /** Runs steps [from, to), calling `onStep` with each step's report (one step behind the devices). */
  async run(
    onStep: (r: StepReport) => void = () => undefined,
    signal?: AbortSignal,
    from = 0,
  ): Promise<StepReport | null> {
    let previous: { it: number; loss: Var; start: number; lr: number } | null = null;
    let last: StepReport | null = null;
    const finish = async (p: NonNullable<typeof previous>, end: number): Promise<StepReport> => {
      const value = await p.loss.item();
      if (!Number.isFinite(value))
        throw new TandemError('TANDEM_ERR_UNSTABLE', `train: the loss became ${value} at step ${p.it + 1}`, {
          step: p.it + 1,
        });
      const stepMs = end - p.start;
      const throughput = (this.samplesPerStep * 1000) / Math.max(stepMs, 1e-3);
      const r: StepReport = {
        step: p.it + 1,
        loss: value,
        lr: p.lr,
        throughput,
        unit: this.tokens === null ? 'images' : 'tokens',
        stepMs,
        mfu: this.mfu(throughput),
      };
      onStep(r);
      return r;
    };
    for (let it = from; it < this.spec.steps; it++) {
      if (signal?.aborted) break;
      const start = performance.now();
      const lr = this.lrAt(it);
      const loss = this.submitStep();
      await loss.backward();
      this.optimizer.step({ lr });
      this.optimizer.zeroGrad();
      for (const v of this.pendingInputs.splice(0)) this.rt.free(v.data);
      // Read the previous step's loss while this one runs.
      if (previous !== null) last = await finish(previous, start);
      previous = { it, loss, start, lr };
    }
    if (previous !== null) {
      await previous.loss.values();
      last = await finish(previous, performance.now());
    }
    return last;
  }

  private mfu(throughput: number): number | null {
    if (this.built.kind !== 'gpt' || this.spec.device === undefined) return null;
    const dev = this.rt.devices.find(
      (d) => d.info.id === this.spec.device || d.info.kind === this.spec.device,
    );
    if (dev === undefined || dev.info.kind === 'cpu') return null;
    const peak = dev.info.peakFlops[this.nn.precision === 'f32' ? 'f32' : 'bf16'];
    if (peak === undefined) return null;
    const m = this.built.model;
    return (throughput * gptFlopsPerToken(m.config, m.parameterCount(), this.tokens!.options.time)) / peak;
  }
}
