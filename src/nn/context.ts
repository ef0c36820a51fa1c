/**
 * The autograd context: owns the tape of one step, the working precision, the device constraint and
 * the seed. Ops (src/nn/ops/) submit their forward kernels through it and record a backward closure;
 * `backward()` replays the tape in reverse, each closure submitting its gradient kernels. Nothing
 * waits on the host between ops: the runtime orders the tasks by the tensors they touch, so a whole
 * forward + backward + optimizer step is one task graph the scheduler places.
 */
import type { DType } from '../core/dtype.js';
import { toNumbers } from '../core/dtype.js';
import { TandemError } from '../core/errors.js';
import type { Scalars } from '../devices/device.js';
import type { Tensor } from '../memory/tensor.js';
import type { Runtime } from '../runtime/runtime.js';
import type { SequenceStep } from '../runtime/sequence.js';
import {
  SEQUENCE_HOLD_BYTES,
  SequenceCollector,
  type SequenceChunks,
} from '../runtime/sequence-collector.js';
import type { TaskHandle } from '../runtime/task.js';
import { gradTarget } from './grad-routing.js';
import { Var, type VarHost } from './var.js';

/** Working precision: parameters and activations in this dtype; accumulation is f32 (f64 for f64). */
export type Precision = 'f32' | 'bf16' | 'f16' | 'f64';

export const PRECISIONS: readonly Precision[] = ['f32', 'bf16', 'f16', 'f64'];

export interface NnOptions {
  /** A device kind or id every task of the model runs on ('cpu', 'cuda0'); default: the scheduler places. */
  readonly device?: string;
  readonly precision?: Precision;
  /** Seed for parameter initialisation and dropout masks. */
  readonly seed?: number;
  /** Labels put on every task (a service job's id: its trace and the device it ran on find them). */
  readonly tags?: Readonly<Record<string, string>>;
  /** Collect kernels into runtime sequences (see `Nn.sequences`); default off (the Trainer's: `TrainSpec`). */
  readonly sequences?: boolean;
}

/** A pass's kernels go out in chunks of 8, 16, ... 256 (see SequenceChunks). */
const NN_CHUNKS: SequenceChunks = { first: 8, max: 256 };

interface TapeNode {
  readonly output: Var;
  /** Sends `grad` (the gradient at `output`) to the inputs by submitting kernels. */
  readonly backward: (grad: Tensor) => void;
  /** Tensors kept for the backward pass only (freed after it). */
  readonly saved: readonly Tensor[];
  /** The parameters among the op's inputs (to tell when a parameter's gradient is final). */
  readonly params: readonly Var[];
}

/**
 * The recorded ops of one forward pass made with `Nn.record` (a pipeline stage's micro-batch): its
 * own tape and intermediates, so several forward passes can be in flight on one context and each be
 * backpropagated later with `Nn.backwardSegment`. Opaque outside the context.
 */
export interface TapeSegment {
  readonly tape: readonly TapeNode[];
  readonly made: readonly Var[];
}

/** A step recorded for replay: its kernels in order, and the tensors it freed (they must outlive it). */
export interface StepCapture {
  readonly steps: SequenceStep[];
  /** Tensors the step freed and did not take again: they live as long as the recorded step. */
  readonly kept: Set<Tensor>;
  /**
   * Freed tensors by dtype and shape, handed out again by later allocations of the same recording: its
   * kernels run in recorded order on one queue, so a later kernel may reuse what an earlier one's
   * output was — the recorded step's memory stays near a step's peak instead of its total.
   */
  readonly spare: Map<string, Tensor[]>;
}

function spareKey(shape: readonly number[], dtype: DType): string {
  return `${dtype}:${shape.join('x')}`;
}

export class Nn implements VarHost {
  readonly precision: Precision;
  readonly device: string | undefined;
  readonly seed: number;
  private readonly tags: Readonly<Record<string, string>> | undefined;
  /**
   * The factor the loss gradient is seeded with (1, or a GradScaler's scale in fp16): kernels that
   * fuse the loss gradient into the forward pass (crossEntropy) read it there.
   */
  lossScale = 1;
  /**
   * When set, the loss gradient is also multiplied by this device tensor's value (f64, one element):
   * fp16's loss scale kept on the device (amp_update), which the host never reads to seed a step.
   */
  lossScaleTensor: Tensor | null = null;
  /**
   * Called during backward() once a parameter's gradient is final: every recorded op that used it has
   * submitted its contribution (data parallelism starts a bucket's all-reduce here, while the backward
   * of earlier layers is still being submitted and run). Parameters no op used are not reported.
   */
  onGradReady: ((p: Var) => void) | null = null;
  /**
   * The priority every task submitted from now on carries (priority-aware policies run higher first);
   * undefined: the runtime's default. A pipeline gives backward passes precedence over forward ones.
   */
  priority: number | undefined = undefined;
  /**
   * Tasks every task submitted from now on waits for, until set back to null: a pipeline stage runs
   * its forward and backward passes in the schedule's order by making each pass's tasks wait for the
   * previous pass's last one.
   */
  waitFor: readonly TaskHandle[] | null = null;
  /** The last task submitted through this context (null before the first). */
  lastTask: TaskHandle | null = null;
  /**
   * Sequence mode: kernels are collected and go to the runtime as one sequence task at the next flush
   * (the end of a backward pass or of an optimizer step, any read): the runtime's per-task host work is
   * paid once per sequence instead of once per kernel (runtime/sequence.ts). Tensors freed meanwhile are
   * held until then (runtime/sequence-collector.ts). Within a pass they also go out in growing chunks
   * (8, 16, ... 256 kernels), so an idle device starts while the host still records. Not while `waitFor`
   * is set: those kernels go one by one, as pipeline stages order passes by task handles.
   */
  sequences: boolean;
  private readonly collector: SequenceCollector;
  /** While a step is recorded for replay (StaticStep): its kernels, and what it freed (kept for it). */
  private capture: StepCapture | null = null;
  private tape: TapeNode[] = [];
  /** Intermediate values made since the last backward or release: freed by them. */
  private made: Var[] = [];
  private gradDepth = 0;
  private nextSeed: number;
  private params: Var[] = [];

  constructor(
    readonly rt: Runtime,
    options: NnOptions = {},
  ) {
    const precision = options.precision ?? 'f32';
    if (!PRECISIONS.includes(precision))
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `unknown precision ${JSON.stringify(precision)}; expected one of ${PRECISIONS.join(', ')}`,
      );
    this.precision = precision;
    this.device = options.device;
    this.tags = options.tags;
    this.sequences = options.sequences ?? false;
    this.collector = new SequenceCollector(rt, () => this.placement(), 'nn', SEQUENCE_HOLD_BYTES, NN_CHUNKS);
    this.seed = options.seed ?? 1;
    this.nextSeed = this.seed;
  }

  /** The dtype of parameters, activations and their gradients. */
  get dtype(): DType {
    return this.precision;
  }

  /** The dtype statistics and losses are kept in: f32, or f64 when the whole model runs in f64. */
  get statDtype(): DType {
    return this.precision === 'f64' ? 'f64' : 'f32';
  }

  /** A fresh seed for one initialiser or dropout mask (deterministic from the context's seed). */
  takeSeed(): number {
    if (this.capture !== null)
      throw new TandemError(
        'TANDEM_ERR_UNSUPPORTED',
        'a recorded step cannot draw random numbers (dropout): its replays would reuse the same mask; use dropout 0 or train without a static step',
      );
    this.nextSeed = (Math.imul(this.nextSeed ^ 0x9e3779b9, 0x85ebca6b) + 0x6b43a9b5) >>> 0;
    return this.nextSeed;
  }

  get gradEnabled(): boolean {
    return this.gradDepth === 0;
  }

  /** Runs `fn` without recording gradients (evaluation, inference). */
  noGrad<T>(fn: () => T): T {
    this.gradDepth++;
    try {
      return fn();
    } finally {
      this.gradDepth--;
    }
  }

  // ---- tensors and kernels --------------------------------------------------------------------

  tensor(shape: readonly number[], dtype: DType = this.dtype): Tensor {
    const c = this.capture;
    if (c !== null) {
      const t = c.spare.get(spareKey(shape, dtype))?.pop();
      if (t !== undefined) {
        c.kept.delete(t);
        return t;
      }
    }
    return this.rt.tensor(shape, dtype);
  }

  /**
   * Submits a kernel: as its own task, or in sequence mode collected for the next `flush` (then null is
   * returned; `lastTask` is the sequence once it is submitted).
   */
  submit(kernel: string, args: Readonly<Record<string, Tensor>>, scalars: Scalars = {}): TaskHandle | null {
    if (this.capture !== null) {
      if (this.waitFor !== null)
        throw new TandemError(
          'TANDEM_ERR_UNSUPPORTED',
          'a recorded step cannot wait for other tasks (pipeline stages)',
        );
      this.capture.steps.push({ kernel, args, scalars });
      return null;
    }
    if (this.sequences && this.waitFor === null) {
      this.collector.push({ kernel, args, scalars });
      return null;
    }
    this.flush();
    const deps = this.waitFor;
    this.lastTask = this.rt.submit({
      kernel,
      args,
      scalars,
      ...this.placement(),
      ...(deps === null || deps.length === 0 ? {} : { deps }),
    });
    return this.lastTask;
  }

  /** Frees `t` once the kernels collected so far are submitted (at once when none are pending). */
  free(t: Tensor): void {
    // A recorded step's replays use every tensor it touched: what it frees lives as long as it does,
    // and later allocations of the same recording may take it again.
    const c = this.capture;
    if (c === null) this.collector.free(t);
    else if (!t.freed && !c.kept.has(t)) {
      c.kept.add(t);
      const key = spareKey(t.shape, t.dtype);
      const list = c.spare.get(key);
      if (list === undefined) c.spare.set(key, [t]);
      else list.push(t);
    }
  }

  /**
   * Sequence mode: submits the collected kernels as one runtime sequence, then frees the tensors held
   * back for them. Called at the end of a backward pass and of an optimizer step, before every read and
   * before a parameter's gradient is reported ready; a no-op with nothing collected.
   */
  flush(): void {
    if (this.capture !== null) return; // the whole step is one sequence, prepared at the end
    this.lastTask = this.collector.flush() ?? this.lastTask;
  }

  /**
   * Starts recording a step for replay (StaticStep.record): from now on kernels are collected into one
   * list and freed tensors are kept, until endCapture hands both over. What was collected before goes
   * out first.
   */
  beginCapture(): void {
    if (this.capture !== null)
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        'a step is already being recorded on this context',
      );
    this.flush();
    this.capture = { steps: [], kept: new Set(), spare: new Map() };
  }

  /** Ends the recording begun by beginCapture: its kernels, and the tensors it freed (now the caller's). */
  endCapture(): StepCapture {
    const c = this.capture;
    if (c === null) throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', 'no step is being recorded');
    this.capture = null;
    return c;
  }

  /** The fields every task and sequence of this context carries: its device, priority and tags. */
  placement(): { device?: string; priority?: number; tags?: Readonly<Record<string, string>> } {
    return {
      ...(this.device === undefined ? {} : { device: this.device }),
      ...(this.priority === undefined ? {} : { priority: this.priority }),
      ...(this.tags === undefined ? {} : { tags: this.tags }),
    };
  }

  /** A parameter: a leaf with a gradient, initialised from `values` (numbers, encoded to the dtype). */
  parameter(shape: readonly number[], values: ArrayLike<number>, name: string): Var {
    const v = new Var(this, this.rt.tensor(shape, this.dtype, values), 'parameter', true, name);
    this.params.push(v);
    return v;
  }

  /** An input: a leaf without a gradient (data, labels, token ids). */
  input(values: ArrayLike<number>, shape: readonly number[], dtype: DType = this.dtype): Var {
    return new Var(this, this.rt.tensor(shape, dtype, values), 'input', false);
  }

  /** Every parameter made through this context, in creation order. */
  get parameters(): readonly Var[] {
    return this.params;
  }

  // ---- recording ------------------------------------------------------------------------------

  /**
   * A new intermediate value. It requires a gradient when recording is on and any input does; then
   * `backward` is recorded for it.
   */
  result(
    data: Tensor,
    inputs: readonly Var[],
    backward: (grad: Tensor) => void,
    saved: readonly Tensor[] = [],
  ): Var {
    const requiresGrad = this.gradEnabled && inputs.some((v) => v.requiresGrad);
    const out = new Var(this, data, 'intermediate', requiresGrad);
    this.made.push(out);
    if (requiresGrad) {
      this.tape.push({ output: out, backward, saved, params: inputs.filter((v) => v.kind === 'parameter') });
      for (const v of inputs) v.uses++;
    } else for (const t of saved) this.free(t);
    return out;
  }

  // ---- the backward pass ----------------------------------------------------------------------

  private root: Var | null = null;
  /** Gradient tensors an op handed to its input by reference during this backward: not freed with
   * the output they came from (filled by grad-routing.ts's adoptGrad). */
  readonly handedOver = new Set<Tensor>();
  /**
   * The last two losses backpropagated, kept readable (a loop reads step k's loss while step k + 1 is
   * queued); older ones are freed.
   */
  private keptLosses: Var[] = [];

  private keepLoss(loss: Var): void {
    this.keptLosses.push(loss);
    while (this.keptLosses.length > 2) this.freeLoss(this.keptLosses.shift()!);
  }

  private freeLoss(v: Var): void {
    if (!v.data.freed) this.free(v.data);
  }

  /** The Var backward() is running from (the fused loss kernels check they are it). */
  get backwardRoot(): Var | null {
    return this.root;
  }

  async backward(root: Var): Promise<void> {
    if (root.data.size !== 1)
      throw new TandemError(
        'TANDEM_ERR_SHAPE',
        `backward: the loss must have one element, it has ${root.data.size} (reduce it first, e.g. with mean)`,
      );
    if (!this.tape.some((n) => n.output === root))
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        'backward: this value is not on the current tape (its step was already released or backpropagated)',
      );
    try {
      this.runTape(this.tape, this.made, root, null);
      // A recorded step's loss is its own (read after every replay, freed with it), not one to release.
      if (this.capture !== null) this.capture.kept.add(root.data);
      else this.keepLoss(root);
    } finally {
      this.tape = [];
      this.made = [];
    }
    // The caller may await this to know the step's work is queued; reading the loss waits for it.
    await Promise.resolve();
  }

  /**
   * Records what `fn` makes on a fresh tape segment instead of the context's tape (which is restored
   * after), so that forward passes of several micro-batches can be in flight at once and each be
   * backpropagated on its own, in any order, with `backwardSegment`.
   */
  record<T>(fn: () => T): { value: T; segment: TapeSegment } {
    const outerTape = this.tape;
    const outerMade = this.made;
    this.tape = [];
    this.made = [];
    try {
      const value = fn();
      return { value, segment: { tape: this.tape, made: this.made } };
    } finally {
      this.tape = outerTape;
      this.made = outerMade;
    }
  }

  /**
   * The backward pass of one recorded segment from `output`: seeded with `grad` (the gradient at
   * `output`, computed elsewhere — the next pipeline stage; it is handed over and freed after use) or,
   * when `grad` is omitted, from `output` as a one-element loss (as `backward`). Parameter gradients
   * add to what earlier segments wrote since the last zeroGrad (micro-batch accumulation). The
   * segment's intermediates are freed, except `output` itself when it is a loss (the caller reads and
   * frees it). Synchronous: the kernels are submitted when it returns.
   */
  backwardSegment(segment: TapeSegment, output: Var, grad?: Tensor): void {
    if (!segment.tape.some((n) => n.output === output))
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        "backwardSegment: the output is not on this segment's tape (already backpropagated?)",
      );
    if (grad !== undefined && (grad.size !== output.data.size || grad.dtype !== output.dtype))
      throw new TandemError(
        'TANDEM_ERR_SHAPE',
        `backwardSegment: the gradient has ${grad.size} ${grad.dtype} elements, the output ${output.data.size} ${output.dtype}`,
      );
    if (grad === undefined && output.data.size !== 1)
      throw new TandemError(
        'TANDEM_ERR_SHAPE',
        'backwardSegment: without a gradient the output must be a one-element loss',
      );
    this.runTape(segment.tape, segment.made, output, grad ?? null);
    // A second call on the same segment finds an empty tape and refuses.
    (segment.tape as TapeNode[]).length = 0;
    (segment.made as Var[]).length = 0;
  }

  /**
   * Replays `tape` in reverse from `root` (seeded with `seedGrad`, or with the loss scale when null),
   * then frees the saved tensors, gradients and intermediates in `made` (a loss root stays readable).
   */
  private runTape(tape: readonly TapeNode[], made: readonly Var[], root: Var, seedGrad: Tensor | null): void {
    this.root = root;
    try {
      if (seedGrad === null) {
        const seed = gradTarget(this, root)!;
        if (this.lossScaleTensor === null) this.submit('fill', { y: seed.tensor }, { value: this.lossScale });
        else this.submit('cast', { x: this.lossScaleTensor, y: seed.tensor });
      } else {
        if (root.grad !== null && root.grad !== seedGrad) this.free(root.grad);
        root.grad = seedGrad;
        root.gradWritten = true;
      }
      const freed = new Set<Tensor>();
      const ready = this.onGradReady;
      const usesLeft = new Map<Var, number>();
      if (ready !== null)
        for (const n of tape) for (const p of n.params) usesLeft.set(p, (usesLeft.get(p) ?? 0) + 1);
      for (let i = tape.length - 1; i >= 0; i--) {
        const node = tape[i]!;
        const out = node.output;
        if (out.grad !== null && out.gradWritten) node.backward(out.grad);
        if (ready !== null)
          for (const p of node.params) {
            const left = usesLeft.get(p)! - 1;
            usesLeft.set(p, left);
            if (left === 0) {
              this.flush(); // the gradient's kernels must be submitted before anyone reads it
              ready(p);
            }
          }
        for (const t of node.saved) this.freeOnce(t, freed);
        if (out.grad !== null && !this.handedOver.delete(out.grad)) this.freeOnce(out.grad, freed);
        out.grad = null;
        out.gradWritten = false;
      }
      // A loss stays readable (loss.item() after backward) until the next step releases it; a
      // pipeline stage's output (seeded with a gradient) is freed with the rest.
      this.releaseMade(seedGrad === null ? made.filter((v) => v !== root) : made, freed);
    } finally {
      this.root = null;
      this.handedOver.clear();
      this.flush();
    }
  }

  /** Frees every intermediate made since the last backward/release except `keep` (eval, inference). */
  release(...keep: Var[]): void {
    for (const v of this.keptLosses) if (!keep.includes(v)) this.freeLoss(v);
    this.keptLosses = this.keptLosses.filter((v) => keep.includes(v));
    for (const node of this.tape) for (const t of node.saved) this.free(t);
    this.tape = this.tape.filter((n) => keep.includes(n.output));
    const freed = new Set<Tensor>();
    this.made = this.made.filter((v) => {
      if (keep.includes(v)) return true;
      this.freeOnce(v.data, freed);
      if (v.grad !== null) this.freeOnce(v.grad, freed);
      return false;
    });
    this.flush();
  }

  private releaseMade(made: readonly Var[], freed: Set<Tensor>): void {
    for (const v of made) {
      this.freeOnce(v.data, freed);
      if (v.grad !== null) this.freeOnce(v.grad, freed);
      v.grad = null;
    }
  }

  private freeOnce(t: Tensor, freed: Set<Tensor>): void {
    if (freed.has(t) || t.freed) return;
    freed.add(t);
    this.free(t);
  }

  /** Forgets every parameter gradient (the next contribution overwrites: no fill task). */
  zeroGrad(params: readonly Var[] = this.params): void {
    for (const p of params) p.gradWritten = false;
  }

  async readTensor(t: Tensor): Promise<Float64Array> {
    if (this.capture !== null)
      throw new TandemError(
        'TANDEM_ERR_UNSUPPORTED',
        'a recorded step cannot read a value on the host (fp16 loss scaling, item()): its replays would not',
      );
    this.flush();
    return toNumbers(t.dtype, await this.rt.read(t));
  }
}
