/**
 * What the optimizers share: the gradient norm (a sum of squares of every gradient, kept on the device
 * so clipping and the fp16 overflow skip need no host read), the step count, and the loss-scale
 * factor to divide gradients by.
 */
import { TandemError } from '../../core/errors.js';
import type { Tensor } from '../../memory/tensor.js';
import type { Nn } from '../context.js';
import type { Var } from '../var.js';

export interface StepOptions {
  /** Multiplies every gradient before use (1 / loss scale in fp16). */
  readonly gradScale?: number;
  /** Leave everything unchanged when the gradient norm is not finite (fp16 overflow). */
  readonly skipNonFinite?: boolean;
  /** Learning rate for this step (a schedule's value); default: the optimizer's. */
  readonly lr?: number;
  /**
   * The step's per-step values (bias corrections, gradScale) are written into the optimizer's device
   * tensor by a kernel (fp16's amp_update, which alone knows whether the step is skipped), so the host
   * writes only the learning rate (AdamW's `lrTensor`), for that kernel. Needs an optimizer with device
   * scalars (AdamW `deviceScalars`). A replay (replayStep) keeps the recorded step's choice.
   */
  readonly hyperOnDevice?: boolean;
}

export abstract class Optimizer {
  /** Steps taken (the next step is number `steps + 1`). */
  steps = 0;
  /** Σ g² over every gradient of the last step (scaled gradients, before gradScale). */
  private norm: Tensor | null = null;
  /** False when the norm was given by `useNorm` (shared by several optimizers; its owner frees it). */
  private ownsNorm = true;

  protected constructor(
    readonly nn: Nn,
    readonly params: readonly Var[],
  ) {}

  /** A zero handed to the update kernels in place of a norm they do not read (see step). */
  private unusedNorm: Tensor | null = null;

  /** Submits the update of every parameter that received a gradient since the last zeroGrad. */
  step(options: StepOptions = {}): void {
    if (this.readsNorm(options)) {
      this.computeNorm();
      this.applyUpdate(options);
      return;
    }
    this.stepWithoutNorm(options);
    this.nn.flush();
  }

  private stepWithoutNorm(options: StepOptions): void {
    // Without clipping or a non-finite skip the kernels ignore the norm's value: no Σ g² pass (a fill
    // and one launch per parameter, each step), a zero in its place; gradNorm() computes it on demand.
    this.dropNorm();
    if (this.unusedNorm === null) {
      this.unusedNorm = this.nn.tensor([1], this.nn.statDtype);
      this.nn.submit('fill', { y: this.unusedNorm }, { value: 0 });
    }
    this.steps++;
    this.stepTaken(options);
    for (const p of this.live()) this.update(p, this.unusedNorm, options);
  }

  /**
   * After the step count advanced, before the updates are submitted: where an optimizer writes the
   * values that change per step into device memory (AdamW with deviceScalars). Nothing by default.
   */
  protected stepTaken(_options: StepOptions): void {}

  /** Whether replayStep can stand for step(): every per-step value reaches the kernels through memory. */
  protected get replayable(): boolean {
    return false;
  }

  /**
   * For a replay of a recorded step (StaticStep): counts the step and writes its per-step values (the
   * learning rate `options.lr`; the other options are the recorded step's), without submitting kernels.
   */
  replayStep(options: StepOptions = {}): void {
    if (!this.replayable)
      throw new TandemError(
        'TANDEM_ERR_UNSUPPORTED',
        `${this.constructor.name}: a recorded step can only be replayed with an optimizer whose per-step values live on the device (AdamW with deviceScalars)`,
      );
    this.steps++;
    this.stepTaken(options);
  }

  /** Whether an update with these options reads the gradient norm (clipping, or the overflow skip). */
  protected readsNorm(_options: StepOptions): boolean {
    return true;
  }

  private live(): Var[] {
    return this.params.filter((p) => p.grad !== null && p.gradWritten);
  }

  /**
   * Submits the sum of squares of every gradient (`gradNorm()` reads it). `step()` does this itself;
   * call it alone to decide on the host whether to update (fp16: a GradScaler skips a step whose
   * gradients overflowed, and then the step count does not advance, as in PyTorch).
   */
  computeNorm(): void {
    const nn = this.nn;
    this.dropNorm();
    const norm = nn.tensor([1], nn.statDtype);
    nn.submit('fill', { y: norm }, { value: 0 });
    this.addSquaresInto(norm);
    this.norm = norm;
  }

  /**
   * The device tensor computeNorm() summed squares into (null before it): ZeRO-1 all-reduces each
   * rank's partial sum here before applyUpdate, so clipping sees the global norm.
   */
  get normTensor(): Tensor | null {
    return this.norm;
  }

  /**
   * Adds Σ g² of this optimizer's live gradients into `acc`, on this optimizer's device: a global
   * norm over several optimizers (pipeline stages on different devices) is one tensor they all add to.
   */
  addSquaresInto(acc: Tensor): void {
    for (const p of this.live()) this.nn.submit('sumsq', { x: p.grad!, acc });
  }

  /**
   * Uses `norm` (Σ g² made elsewhere, e.g. by several optimizers' `addSquaresInto`) for the next
   * `applyUpdate`'s clipping. The caller keeps ownership of the tensor.
   */
  useNorm(norm: Tensor): void {
    this.dropNorm();
    this.norm = norm;
    this.ownsNorm = false;
  }

  private dropNorm(): void {
    if (this.norm !== null && this.ownsNorm) this.nn.free(this.norm);
    this.norm = null;
    this.ownsNorm = true;
  }

  /**
   * Submits the updates with the norm of the last computeNorm(); the step count advances.
   * `beforeUpdates` submits what must run after the step's values are written and before the update
   * kernels read them (fp16's amp_update).
   */
  applyUpdate(options: StepOptions = {}, beforeUpdates?: () => void): void {
    if (this.norm === null) this.computeNorm();
    this.steps++;
    this.stepTaken(options);
    beforeUpdates?.();
    for (const p of this.live()) this.update(p, this.norm!, options);
    this.nn.flush(); // sequence mode: the step's updates go out now
  }

  protected abstract update(p: Var, norm: Tensor, options: StepOptions): void;

  /**
   * The global gradient norm of the last step (after dividing by gradScale), computed now if step()
   * did not need it (then from the gradients still held: 0 after zeroGrad).
   */
  async gradNorm(gradScale = 1): Promise<number> {
    if (this.norm === null) this.computeNorm();
    return Math.sqrt((await this.nn.readTensor(this.norm!))[0]!) * gradScale;
  }

  /** Frees the norm tensors (dispose() of an optimizer that is not used after it). */
  protected freeNorms(): void {
    this.dropNorm();
    if (this.unusedNorm !== null) this.nn.free(this.unusedNorm);
    this.unusedNorm = null;
  }

  zeroGrad(): void {
    this.nn.zeroGrad(this.params);
  }
}
