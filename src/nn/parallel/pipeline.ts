/**
 * Pipeline-parallel training of GPT-2: the model's blocks split into stages, each stage's parameters,
 * activations and optimizer on its own device (an `Nn` per stage, pinned), the batch cut into m
 * micro-batches scheduled 1F1B (or GPipe). A whole step — every micro-batch's forward and backward on
 * every stage, the gradient accumulation, the global-norm clip and each stage's AdamW update — is ONE
 * task graph submitted front to back without waiting: a stage's output is a runtime tensor that the
 * next stage's tasks read, so the runtime's coherence layer copies it to that device (a peer copy
 * between GPUs) and orders the consumer after the producer; gradients go back the same way. Each
 * stage's passes follow the schedule's order (each pass's first task waits for the previous pass's
 * last), so the stages run concurrently, as the schedule says.
 */
import { TandemError } from '../../core/errors.js';
import type { Tensor } from '../../memory/tensor.js';
import type { Runtime } from '../../runtime/runtime.js';
import { Nn, type TapeSegment } from '../context.js';
import { TokenLoader } from '../data/tokens.js';
import { gptConfig, type GptConfig } from '../models/gpt.js';
import { AdamW } from '../optim/adamw.js';
import { cosineWithWarmup } from '../optim/schedule.js';
import type { StepReport, TrainData, TrainSpec } from '../train.js';
import { Var } from '../var.js';
import { GptStage, balancedSplit } from './gpt-stage.js';
import { type ScheduleKind, requireScheduleKind, scheduleOrders, submissionOrder } from './schedule.js';

export interface PipelineOptions {
  /** One device id or kind per stage ('cpu', 'cuda0', 'cuda1'); the same device may appear twice. */
  readonly devices: readonly string[];
  /** Micro-batches per step; must divide the batch. */
  readonly microBatches: number;
  readonly schedule?: ScheduleKind;
  /** Layers per stage (default: balanced by FLOPs, the head counted on the last stage). */
  readonly split?: readonly number[];
  /**
   * Called after each pass is submitted with the ids of its first and last task (ids grow with
   * submission, and a pass's tasks are submitted together): a benchmark maps trace events to stages.
   */
  readonly onPass?: (pass: PassRecord) => void;
}

export interface PassRecord {
  readonly step: number;
  readonly stage: number;
  readonly kind: 'F' | 'B';
  readonly micro: number;
  readonly firstTaskId: number;
  readonly lastTaskId: number;
}

interface Stage {
  readonly nn: Nn;
  readonly model: GptStage;
  readonly optimizer: AdamW;
}

/** A micro-batch in flight on one stage: its recorded forward pass and the values at its edges. */
interface InFlight {
  readonly segment: TapeSegment;
  /** The stage's input (ids on the first stage, else a leaf wrapping the previous stage's output). */
  readonly input: Var;
  readonly output: Var;
}

export class PipelineTrainer {
  readonly stages: readonly Stage[];
  readonly config: GptConfig;
  readonly schedule: ScheduleKind;
  readonly microBatches: number;
  readonly split: readonly number[];
  private readonly tokens: TokenLoader;
  private readonly lrAt: (it: number) => number;
  private readonly time: number;
  private readonly onPass: ((pass: PassRecord) => void) | undefined;
  private stepsSubmitted = 0;
  /** The global Σ g² of the last step (the clip reads it; freed at the next step). */
  private norm: Tensor | null = null;

  constructor(
    readonly rt: Runtime,
    readonly spec: TrainSpec,
    data: TrainData,
    options: PipelineOptions,
  ) {
    if (spec.model !== 'gpt')
      throw new TandemError(
        'TANDEM_ERR_UNSUPPORTED',
        `pipeline: only the gpt model is split into stages, not ${spec.model}`,
      );
    if (data.kind !== 'tokens')
      throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', 'pipeline: gpt needs token data');
    if (spec.precision === 'f16')
      throw new TandemError(
        'TANDEM_ERR_UNSUPPORTED',
        'pipeline: f16 needs a loss scaler, which the pipeline does not run; use bf16 (no scaler needed) or f32',
      );
    for (const [k, v] of [
      ['steps', spec.steps],
      ['batch', spec.batch],
    ] as const)
      if (!Number.isInteger(v) || v < 1)
        throw new TandemError(
          'TANDEM_ERR_INVALID_ARGUMENT',
          `train: ${k} must be a positive integer, got ${v}`,
        );
    const m = options.microBatches;
    if (!Number.isInteger(m) || m < 1 || spec.batch % m !== 0)
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `pipeline: ${m} micro-batches do not divide the batch of ${spec.batch}`,
        { batch: spec.batch, microBatches: m },
      );
    this.microBatches = m;
    this.onPass = options.onPass;
    this.schedule = requireScheduleKind(options.schedule ?? '1f1b');
    const p = options.devices.length;
    for (const d of options.devices)
      if (!rt.devices.some((x) => x.info.id === d || x.info.kind === d))
        throw new TandemError('TANDEM_ERR_NO_DEVICE', `pipeline: no device ${JSON.stringify(d)} is open`, {
          devices: rt.devices.map((x) => x.info.id),
        });
    this.config = gptConfig(spec.preset ?? 'gpt-mini', spec.gpt);
    this.split =
      options.split === undefined
        ? balancedSplit(this.config, p, spec.seqLen ?? this.config.context)
        : [...options.split];
    if (
      this.split.length !== p ||
      this.split.some((n) => !Number.isInteger(n) || n < 1) ||
      this.split.reduce((a, b) => a + b, 0) !== this.config.layers
    )
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `pipeline: the split ${JSON.stringify(this.split)} must give each of the ${p} stages at least one of the ${this.config.layers} layers`,
      );
    const lr = spec.lr ?? 6e-4;
    let firstBlock = 0;
    this.stages = options.devices.map((device, s) => {
      const nn = new Nn(rt, {
        precision: spec.precision ?? 'f32',
        seed: spec.seed ?? 1,
        device,
        ...(spec.tags === undefined ? {} : { tags: { ...spec.tags, stage: String(s) } }),
      });
      const model = new GptStage(nn, this.config, s, p, firstBlock, this.split[s]!);
      firstBlock += this.split[s]!;
      const optimizer = new AdamW(nn, model.parameters(), {
        lr,
        beta1: 0.9,
        beta2: 0.95,
        weightDecay: spec.weightDecay ?? 0.1,
        decayMatricesOnly: true,
        maxNorm: spec.maxNorm ?? 1,
      });
      return { nn, model, optimizer };
    });
    // Every micro-batch's loss is a mean over its rows; the step's loss is their mean.
    this.lastStage.nn.lossScale = 1 / m;
    this.syncHead();
    this.lrAt = cosineWithWarmup({
      maxLr: lr,
      minLr: lr * 0.1,
      warmupSteps: spec.warmupSteps ?? 0,
      totalSteps: spec.steps,
    });
    this.time = spec.seqLen ?? this.config.context;
    this.tokens = new TokenLoader(data.train, {
      batch: spec.batch,
      time: this.time,
      seed: spec.seed ?? 1,
      vocab: this.config.vocab,
    });
  }

  private get firstStage(): Stage {
    return this.stages[0]!;
  }

  private get lastStage(): Stage {
    return this.stages[this.stages.length - 1]!;
  }

  get samplesPerStep(): number {
    return this.spec.batch * this.time;
  }

  /** Every trained parameter with its name, over all stages (the head's copy excluded). */
  namedParameters(): [string, Var][] {
    return this.stages.flatMap((s) => s.model.namedParameters());
  }

  private lastTaskId(): number {
    return Math.max(-1, ...this.stages.map((s) => s.nn.lastTask?.id ?? -1));
  }

  /** Copies wte (first stage) into the last stage's head (a copy task on the last stage's device). */
  private syncHead(): void {
    const first = this.firstStage.model;
    const last = this.lastStage.model;
    if (first === last) return;
    last.nn.submit('copy', { x: first.wte!.data, y: last.head!.data });
  }

  /**
   * Submits one step: every micro-batch's forward and backward on every stage in the schedule's
   * order, then the update. Returns the micro-batches' losses (one-element tensors, not yet computed;
   * the caller reads and frees them).
   */
  submitStep(lr: number): Var[] {
    const m = this.microBatches;
    const p = this.stages.length;
    const rows = this.spec.batch / m;
    const t = this.time;
    const batch = this.tokens.next();
    const inputs: Var[] = [];
    const losses: Var[] = new Array<Var>(m);
    const flight: (InFlight | undefined)[][] = this.stages.map(() => new Array<InFlight | undefined>(m));
    const gradIn: (Tensor | undefined)[][] = this.stages.map(() => new Array<Tensor | undefined>(m));
    const lastOf: (ReturnType<Nn['submit']> | null)[] = this.stages.map(() => null);
    const step = this.stepsSubmitted++;
    for (const { stage: s, op } of submissionOrder(scheduleOrders(this.schedule, p, m))) {
      const { nn, model } = this.stages[s]!;
      const before = this.lastTaskId();
      const j = op.micro;
      // The stage's passes run in the schedule's order: this pass's tasks wait for the last one's.
      const prev = lastOf[s];
      nn.waitFor = prev === null ? null : [prev];
      // Backward passes before forward ones, earlier micro-batches first, where the policy looks.
      nn.priority = op.kind === 'B' ? 2 * m - j : m - j;
      if (op.kind === 'F') {
        let input: Var;
        let targets: Var | undefined;
        if (s === 0) {
          input = nn.input(batch.inputs.subarray(j * rows * t, (j + 1) * rows * t), [rows, t], 'i32');
          inputs.push(input);
        } else {
          // The previous stage's output tensor itself: its tasks here make the runtime copy it over.
          input = new Var(nn, flight[s - 1]![j]!.output.data, 'input', true);
        }
        if (s === p - 1) {
          targets = nn.input(batch.targets.subarray(j * rows * t, (j + 1) * rows * t), [rows * t], 'i32');
          inputs.push(targets);
        }
        const { value: output, segment } = nn.record(() => model.forward(input, t, targets));
        flight[s]![j] = { segment, input, output };
        if (s === p - 1) losses[j] = output;
      } else {
        const f = flight[s]![j]!;
        if (s === p - 1) nn.backwardSegment(f.segment, f.output);
        else nn.backwardSegment(f.segment, f.output, gradIn[s]![j]!);
        if (s > 0) {
          // The gradient at this stage's input goes to the previous stage (which frees it).
          const g = f.input.grad;
          if (g === null)
            throw new TandemError('TANDEM_ERR_INTERNAL', `pipeline: stage ${s} made no input gradient`);
          f.input.grad = null;
          gradIn[s - 1]![j] = g;
        }
        flight[s]![j] = undefined;
      }
      lastOf[s] = nn.lastTask;
      if (this.onPass !== undefined && nn.lastTask !== null && nn.lastTask.id > before)
        this.onPass({
          step,
          stage: s,
          kind: op.kind,
          micro: j,
          firstTaskId: before + 1,
          lastTaskId: nn.lastTask.id,
        });
      nn.waitFor = null;
      nn.priority = undefined;
    }
    this.update(lr);
    for (const v of inputs) this.rt.free(v.data);
    return losses;
  }

  /** Tied gradients summed, the global norm over all stages, each stage's AdamW, the head re-synced. */
  private update(lr: number): void {
    const first = this.firstStage;
    const last = this.lastStage;
    if (first !== last) {
      const head = last.model.head!;
      if (head.grad !== null && head.gradWritten)
        first.nn.submit('axpy', { x: head.grad, y: first.model.wte!.grad! }, { alpha: 1 });
      head.gradWritten = false;
    }
    if (this.norm !== null) this.rt.free(this.norm);
    const norm = first.nn.tensor([1], first.nn.statDtype);
    this.norm = norm;
    first.nn.submit('fill', { y: norm }, { value: 0 });
    for (const s of this.stages) s.optimizer.addSquaresInto(norm);
    for (const s of this.stages) {
      s.optimizer.useNorm(norm);
      s.optimizer.applyUpdate({ lr });
      s.optimizer.zeroGrad();
    }
    this.syncHead();
  }

  /** Frees every stage's parameters, gradients and optimizer state (the trainer is not used after). */
  dispose(): void {
    for (const { nn, optimizer } of this.stages) {
      optimizer.dispose();
      for (const p of nn.parameters) {
        if (!p.data.freed) this.rt.free(p.data);
        if (p.grad !== null && !p.grad.freed) this.rt.free(p.grad);
        p.grad = null;
      }
    }
    const last = this.lastStage.model;
    if (last !== this.firstStage.model) {
      const head = last.head!;
      if (!head.data.freed) this.rt.free(head.data);
      if (head.grad !== null && !head.grad.freed) this.rt.free(head.grad);
      head.grad = null;
    }
    if (this.norm !== null && !this.norm.freed) this.rt.free(this.norm);
    this.norm = null;
  }

  /**
   * Runs every step, reporting each (one step behind the devices: step k's losses are read while step
   * k + 1 is queued). Stops at a step boundary when `signal` aborts; NaN stops with UNSTABLE.
   */
  async run(
    onStep: (r: StepReport) => void = () => undefined,
    signal?: AbortSignal,
  ): Promise<StepReport | null> {
    let previous: { it: number; losses: Var[]; start: number; lr: number } | null = null;
    let last: StepReport | null = null;
    const finish = async (q: NonNullable<typeof previous>, end: number): Promise<StepReport> => {
      let sum = 0;
      for (const l of q.losses) sum += await l.item();
      for (const l of q.losses) this.rt.free(l.data);
      const loss = sum / q.losses.length;
      if (!Number.isFinite(loss))
        throw new TandemError('TANDEM_ERR_UNSTABLE', `train: the loss became ${loss} at step ${q.it + 1}`, {
          step: q.it + 1,
        });
      const stepMs = end - q.start;
      const r: StepReport = {
        step: q.it + 1,
        loss,
        lr: q.lr,
        throughput: (this.samplesPerStep * 1000) / Math.max(stepMs, 1e-3),
        unit: 'tokens',
        stepMs,
        mfu: null,
      };
      onStep(r);
      return r;
    };
    for (let it = 0; it < this.spec.steps; it++) {
      if (signal?.aborted) break;
      const start = performance.now();
      const lr = this.lrAt(it);
      const losses = this.submitStep(lr);
      if (previous !== null) last = await finish(previous, start);
      previous = { it, losses, start, lr };
    }
    if (previous !== null) {
      await previous.losses[previous.losses.length - 1]!.values();
      last = await finish(previous, performance.now());
    }
    return last;
  }
}

export interface PipelineRunOptions extends PipelineOptions {
  readonly onStep?: (r: StepReport) => void;
  readonly signal?: AbortSignal;
}

/** Trains `spec` pipelined over `options.devices`; the same result shape as data-parallel training. */
export async function trainPipeline(
  rt: Runtime,
  spec: TrainSpec,
  data: TrainData,
  options: PipelineRunOptions,
): Promise<{ finalLoss: number | null; steps: number }> {
  const trainer = new PipelineTrainer(rt, spec, data, options);
  let steps = 0;
  const last = await trainer.run((r) => {
    steps = r.step;
    options.onStep?.(r);
  }, options.signal);
  return { finalLoss: last?.loss ?? null, steps };
}
