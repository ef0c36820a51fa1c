/**
 * The training loop shared by `tandem train`, the service's `train` job and library users: builds the
 * model, optimizer and data from a spec, runs steps (the forward, backward and update of a step are
 * submitted as one task graph; the loss of step k is read while step k + 1 is queued, so the devices
 * never wait for the host between steps), reports progress, stops on NaN, on a signal, or at the end.
 */
import { TandemError } from '../core/errors.js';
import type { Runtime } from '../runtime/runtime.js';
import { Nn } from './context.js';
import { DeviceImages } from './data/device-images.js';
import { type ImageSet, checkImageSet, imageBatch } from './data/images.js';
import { TokenLoader } from './data/tokens.js';
import { Cnn, Mlp, type Classifier } from './models/classifiers.js';
import { gptFlopsPerToken } from './models/gpt.js';
import { classifierMemoryPlan, gptMemoryPlan, requireFits } from './memory.js';
import { DeviceGradScaler } from './device-grad-scaler.js';
import { GradScaler, type GradScalerState } from './grad-scaler.js';
import { AdamW } from './optim/adamw.js';
import { cosineWithWarmup } from './optim/schedule.js';
import { StaticTraining } from './train-static.js';
import type { Var } from './var.js';

/** Activation elements per image kept by the CNN (28×28) and the default MLP, for the memory check. */
const CNN_ACTIVATIONS = 32 * 784 * 2 + 32 * 196 + 64 * 196 * 2 + 64 * 49 * 2 + 128 * 2 + 10;
const MLP_ACTIVATIONS = 784 + 512 * 4 + 10;

export * from './train-data.js';
import type { Batch, StepInputs, TrainData } from './train-data.js';

export * from './train-spec.js';
import {
  type Built,
  type StepReport,
  type TrainSpec,
  adamwOptions,
  buildModel,
  classifierShape,
  sequencesByDefault,
  staticStepByDefault,
} from './train-spec.js';

export class Trainer {
  readonly nn: Nn;
  readonly built: Built;
  readonly optimizer: AdamW;
  readonly step0: number;
  /** The learning rate of step `it` (the schedule). */
  readonly lrAt: (it: number) => number;
  private readonly tokens: TokenLoader | null;
  private readonly deviceImages: DeviceImages | null = null;
  private imageIndex = 0;

  /** Rows the data source hands out per step: spec.batch, or the global batch of data parallelism. */
  private readonly dataRows: number;

  constructor(
    readonly rt: Runtime,
    readonly spec: TrainSpec,
    readonly data: TrainData,
    options: { readonly dataRows?: number } = {},
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
    this.dataRows = options.dataRows ?? spec.batch;
    // Data parallelism (dataRows ≠ batch) shards each batch over replicas: not a recorded step.
    const staticStep =
      spec.staticStep ??
      (this.dataRows === spec.batch && staticStepByDefault(spec.model, spec.device, spec.precision));
    if (staticStep && spec.precision === 'f16' && spec.lossScaling === 'host')
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        "train: staticStep with fp16 needs lossScaling 'device' (the host's loss scaling reads the norm inside every step)",
      );
    if (staticStep && this.dataRows !== spec.batch)
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        'train: staticStep is not available with data parallelism',
      );
    this.nn = new Nn(rt, {
      precision: spec.precision ?? 'f32',
      seed: spec.seed ?? 1,
      ...(spec.device === undefined ? {} : { device: spec.device }),
      ...(spec.tags === undefined ? {} : { tags: spec.tags }),
      sequences: spec.sequences ?? sequencesByDefault(spec.model, spec.device),
    });
    this.built = buildModel(this.nn, spec);
    const isGpt = this.built.kind === 'gpt';
    if (isGpt !== (data.kind === 'tokens'))
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `train: model ${spec.model} needs ${isGpt ? 'token' : 'image'} data`,
      );
    const adamw = adamwOptions(spec);
    const lr = adamw.lr;
    // fp16 decides its loss scale on the device unless asked not to (lossScaling 'host').
    const deviceScaling = this.nn.precision === 'f16' && (spec.lossScaling ?? 'device') === 'device';
    this.optimizer = new AdamW(this.nn, this.built.model.parameters(), {
      ...adamw,
      deviceScalars: staticStep || deviceScaling,
    });
    this.deviceScaler = deviceScaling ? new DeviceGradScaler(this.nn, this.optimizer) : null;
    const scaler = this.deviceScaler;
    this.staticTraining = staticStep
      ? new StaticTraining(this.nn, this.optimizer, scaler === null ? undefined : (r) => scaler.update(r))
      : null;
    this.lrAt = cosineWithWarmup({
      maxLr: lr,
      minLr: lr * 0.1,
      warmupSteps: spec.warmupSteps ?? 0,
      totalSteps: spec.steps,
    });
    this.step0 = 0;
    this.scaler =
      this.deviceScaler !== null
        ? this.deviceScaler.host
        : this.nn.precision === 'f16'
          ? new GradScaler()
          : null;
    this.checkMemory();
    if (data.kind === 'tokens' && this.built.kind === 'gpt') {
      const c = this.built.model.config;
      this.tokens = new TokenLoader(data.train, {
        batch: this.dataRows,
        time: spec.seqLen ?? c.context,
        seed: spec.seed ?? 1,
        vocab: c.vocab,
      });
    } else {
      this.tokens = null;
      if (data.kind === 'images' && this.built.kind === 'classifier') {
        const { pixels, classes } = classifierShape(this.built.model);
        checkImageSet(data.train, pixels, classes);
      }
      if (data.kind === 'images' && data.train.count < this.dataRows)
        throw new TandemError(
          'TANDEM_ERR_BAD_DATA',
          `train: the data set has ${data.train.count} images, fewer than one batch of ${this.dataRows}`,
        );
      if (data.kind === 'images' && spec.imagesOnDevice === true)
        this.deviceImages = new DeviceImages(this.nn, data.train);
    }
  }

  /** Refuses, before the first step, a batch that cannot fit in the pinned GPU's memory. */
  private checkMemory(): void {
    const id = this.spec.device;
    if (id === undefined) return;
    const dev = this.rt.devices.find((d) => d.info.id === id || d.info.kind === id);
    if (dev === undefined || dev.info.kind === 'cpu' || !(dev.info.memoryBytes > 0)) return;
    const m = this.built;
    const plan =
      m.kind === 'gpt'
        ? gptMemoryPlan(m.model.config, this.nn.dtype, this.spec.seqLen ?? m.model.config.context)
        : classifierMemoryPlan(
            m.model.parameterCount(),
            m.model instanceof Cnn ? CNN_ACTIVATIONS : MLP_ACTIVATIONS,
            this.nn.dtype,
          );
    // Leave a tenth for the allocator's rounding, kernels' scratch and other jobs' small tensors.
    requireFits(plan, this.spec.batch, dev.info.memoryBytes * 0.9, dev.info.id);
  }

  /** Batches the data source has handed out (checkpoints store it so a resumed run sees the same data). */
  get dataPosition(): number {
    return this.tokens === null ? this.imageIndex : this.tokens.position;
  }

  seekData(position: number): void {
    if (this.tokens === null) this.imageIndex = position;
    else this.tokens.seek(position);
  }

  get samplesPerStep(): number {
    return this.tokens === null ? this.spec.batch : this.spec.batch * this.tokens.options.time;
  }

  /** Submits one step's forward (its backward and update follow); returns its loss (not yet computed). */
  submitStep(): Var {
    return this.submitInputs(this.nextInputs());
  }

  /**
   * The next step's data as host arrays, and how the model makes the loss from them as inputs: the
   * batch's tokens or pixels and labels, or (imagesOnDevice) the indices of its images on the device.
   */
  nextInputs(): StepInputs {
    if (this.deviceImages === null) return this.inputsOf(this.nextBatch());
    const images = this.deviceImages;
    const model = (this.built as { readonly model: Classifier }).model;
    const batch = this.spec.batch;
    const { indices, labels } = images.indices(batch, this.imageIndex++, this.spec.seed ?? 1);
    return {
      arrays: [
        { values: indices, shape: [batch, 1], dtype: 'i32' },
        { values: labels, shape: [batch], dtype: 'i32' },
      ],
      loss: ([ids, y]) => model.loss(images.gather(ids!, model instanceof Mlp), y!),
    };
  }

  /** The next batch from the data: spec.batch rows, or dataRows (data parallelism shards it). */
  nextBatch(): Batch {
    if (this.tokens !== null) {
      const b = this.tokens.next();
      return { kind: 'tokens', rows: this.dataRows, time: this.tokens.options.time, ...b };
    }
    const set = (this.data as { train: ImageSet }).train;
    const b = imageBatch(set, this.dataRows, this.imageIndex++, this.spec.seed ?? 1);
    return { kind: 'images', rows: this.dataRows, height: set.height, width: set.width, ...b };
  }

  /** Submits the forward pass and loss of `b` (any number of rows); returns the loss. */
  submitBatch(b: Batch): Var {
    return this.submitInputs(this.inputsOf(b));
  }

  private inputsOf(b: Batch): StepInputs {
    const built = this.built;
    if (b.kind === 'tokens' && built.kind === 'gpt')
      return {
        arrays: [
          { values: b.inputs, shape: [b.rows, b.time], dtype: 'i32' },
          { values: b.targets, shape: [b.rows * b.time], dtype: 'i32' },
        ],
        loss: ([ids, targets]) => built.model.loss(ids!, targets!),
      };
    if (b.kind === 'images' && built.kind === 'classifier')
      return {
        arrays: [
          { values: b.images, shape: [b.rows, 1, b.height, b.width], dtype: this.nn.dtype },
          { values: b.labels, shape: [b.rows], dtype: 'i32' },
        ],
        loss: ([x, y]) => built.model.loss(x!, y!),
      };
    throw new TandemError('TANDEM_ERR_INTERNAL', `train: a ${b.kind} batch for model ${this.spec.model}`);
  }

  private submitInputs(s: StepInputs): Var {
    const inputs = s.arrays.map((a) => this.nn.input(a.values, a.shape, a.dtype));
    const loss = s.loss(inputs);
    this.freeAfterStep(...inputs);
    return loss;
  }

  /** After a step's update is queued: frees its inputs and forgets its gradients. */
  endStep(): void {
    this.optimizer.zeroGrad();
    for (const v of this.pendingInputs.splice(0)) this.nn.free(v.data);
  }

  /** Frees what the trainer holds on the devices besides the model: optimizer state, resident images. */
  dispose(): void {
    this.staticTraining?.dispose();
    this.deviceScaler?.dispose();
    this.optimizer.dispose();
    this.deviceImages?.dispose();
  }

  private pendingInputs: Var[] = [];
  /** staticStep: the recorded step and its input tensors. */
  private readonly staticTraining: StaticTraining | null;
  /**
   * fp16 only: dynamic loss scaling with torch.amp.GradScaler's rules — with device scaling (the
   * default), the options and, after `syncState`, the state of `deviceScaler`.
   */
  readonly scaler: GradScaler | null;
  /** fp16 with lossScaling 'device': the scale, tracker and step count live on the device. */
  readonly deviceScaler: DeviceGradScaler | null;

  /**
   * Brings the host's view of state kept on the device up to date (fp16's scale and tracker, the
   * optimizer steps really taken): waits for every submitted step. Checkpoints call it first.
   */
  async syncState(): Promise<void> {
    await this.deviceScaler?.sync();
  }

  scalerState(): unknown {
    return this.scaler?.stateDict() ?? null;
  }

  /** After a checkpoint set `optimizer.steps`: the saved scaler state (torch's state_dict) or null. */
  restoreScaler(state: unknown): void {
    const saved = state !== null && typeof state === 'object' ? (state as Partial<GradScalerState>) : null;
    if (this.deviceScaler !== null) this.deviceScaler.load(saved);
    else if (this.scaler !== null && saved !== null) this.scaler.loadStateDict(saved);
  }

  /** Seeds the next step's loss gradient with fp16's loss scale (nothing otherwise). */
  seedLossScale(): void {
    if (this.deviceScaler !== null) this.deviceScaler.seed();
    else if (this.scaler !== null) this.nn.lossScale = this.scaler.scale;
  }

  /**
   * The update of a step. fp16: the gradients are unscaled in the update and an overflow skips it —
   * decided on the device (DeviceGradScaler), or with lossScaling 'host' by reading the norm first (a
   * host sync every step) and updating the host's GradScaler.
   */
  async update(lr: number): Promise<void> {
    if (this.deviceScaler !== null) {
      this.deviceScaler.update(lr);
      return;
    }
    if (this.scaler === null) {
      this.optimizer.step({ lr });
      return;
    }
    this.optimizer.computeNorm();
    const finite = Number.isFinite(await this.optimizer.gradNorm());
    if (finite) this.optimizer.applyUpdate({ lr, gradScale: this.scaler.inverseScale });
    this.scaler.update(!finite);
  }
  /** Optimizer steps taken (queued) so far, including those before a resume. */
  stepsDone = 0;

  private freeAfterStep(...inputs: Var[]): void {
    this.pendingInputs.push(...inputs);
  }

  /**
   * Runs steps [from, spec.steps), calling `onStep` with each step's report (one step behind the
   * devices) and `atBoundary` after each step's update is queued (checkpoints: reading the weights
   * waits for it). Stops early, at a step boundary, when `signal` aborts.
   */
  async run(
    onStep: (r: StepReport) => void = () => undefined,
    signal?: AbortSignal,
    from = 0,
    atBoundary?: (stepsDone: number) => Promise<void>,
  ): Promise<StepReport | null> {
    let previous: { it: number; loss: () => Promise<number>; start: number; lr: number } | null = null;
    let last: StepReport | null = null;
    const finish = async (p: NonNullable<typeof previous>, end: number): Promise<StepReport> => {
      const value = await p.loss();
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
      let loss: () => Promise<number>;
      if (this.staticTraining !== null) {
        this.seedLossScale();
        const queued = await this.staticTraining.submit(this.nextInputs(), lr);
        loss = () => queued.loss;
      } else {
        this.seedLossScale();
        const v = this.submitStep();
        await v.backward();
        await this.update(lr);
        this.endStep();
        loss = () => v.item();
      }
      this.stepsDone = it + 1;
      if (atBoundary) await atBoundary(it + 1);
      // Read the previous step's loss while this one runs.
      if (previous !== null) last = await finish(previous, start);
      previous = { it, loss, start, lr };
    }
    if (previous !== null) {
      await previous.loss().catch(() => undefined); // the step's end, for its time (finish reports errors)
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
