/**
 * The autograd context: owns the tape of one step, the working precision and the seed. Ops
 * (src/nn/ops/) submit their forward kernels through it and record a backward closure; `backward()`
 * replays the tape in reverse, each closure submitting its gradient kernels. Nothing waits on the host
 * between ops: the runtime orders the tasks by the tensors they touch, so a whole forward + backward +
 * optimizer step is one task graph the scheduler places. How the kernels go out — the device
 * constraint, task by task, in runtime sequences or into a recorded step — is Nn's base class
 * (submission.ts); the replay itself is tape.ts, where each gradient contribution goes grad-routing.ts.
 */
import type { DType } from '../core/dtype.js';
import { TandemError } from '../core/errors.js';
import type { Tensor } from '../memory/tensor.js';
import type { Runtime } from '../runtime/runtime.js';
import { precisionOf, type NnOptions, type Precision } from './options.js';
import { KernelSubmitter } from './submission.js';
import {
  checkLossRoot,
  checkSegmentSeed,
  freeOnce,
  replayTape,
  type TapeNode,
  type TapeSegment,
} from './tape.js';
import { Var, type VarHost } from './var.js';

export { PRECISIONS, type NnOptions, type Precision } from './options.js';
export type { StepCapture } from './submission.js';
export type { TapeSegment } from './tape.js';

export class Nn extends KernelSubmitter implements VarHost {
  readonly precision: Precision;
  readonly seed: number;
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
  private tape: TapeNode[] = [];
  /** Intermediate values made since the last backward or release: freed by them. */
  private made: Var[] = [];
  private gradDepth = 0;
  private nextSeed: number;
  private params: Var[] = [];

  constructor(rt: Runtime, options: NnOptions = {}) {
    super(rt, options);
    this.precision = precisionOf(options);
    this.seed = options.seed ?? 1;
    this.nextSeed = this.seed;
  }

  /** The dtype of parameters, activations and their gradients. */
  override get dtype(): DType {
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

  // ---- leaves ---------------------------------------------------------------------------------

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
    checkLossRoot(this.tape, root);
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
    checkSegmentSeed(segment, output, grad);
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
      replayTape(this, tape, made, root, seedGrad);
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
      freeOnce(this, v.data, freed);
      if (v.grad !== null) freeOnce(this, v.grad, freed);
      return false;
    });
    this.flush();
  }

  /** Forgets every parameter gradient (the next contribution overwrites: no fill task). */
  zeroGrad(params: readonly Var[] = this.params): void {
    for (const p of params) p.gradWritten = false;
  }
}
