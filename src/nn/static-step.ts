/**
 * A training step recorded once and replayed: the forward, backward and optimizer kernels of one step
 * become one prepared runtime sequence over fixed tensors (inputs, activations, gradients, optimizer
 * state, scratch), submitted again for every later step. Per step the host then writes the new batch
 * into the input tensors and the schedule's values into the optimizer's device scalars (AdamW with
 * `deviceScalars`), and submits one task — instead of recording the autograd tape and validating and
 * launching every kernel again. On a CUDA device the prepared sequence is captured as a CUDA graph on
 * its second run and replayed with one cuGraphLaunch from the third (devices/cuda/sequence-graphs.ts).
 *
 * What a step may not do while it is recorded, each refused with TANDEM_ERR_UNSUPPORTED: draw random
 * numbers (dropout: every replay would reuse the mask), read a value on the host (fp16's GradScaler
 * decides per step on the host), wait for other tasks (pipeline stages). A tensor the step frees goes to a
 * later allocation of the same shape and dtype within it (Nn's capture mode), or is kept for the replays
 * and freed by dispose(): memory stays near a step's peak.
 */
import { TandemError } from '../core/errors.js';
import type { Tensor } from '../memory/tensor.js';
import type { PreparedSequence } from '../runtime/sequence.js';
import type { TaskHandle } from '../runtime/task.js';
import type { Nn, StepCapture } from './context.js';

export class StaticStep<T> {
  private disposed = false;

  private constructor(
    private readonly nn: Nn,
    private readonly prepared: PreparedSequence,
    private readonly kept: readonly Tensor[],
    /** What the recorded body returned (the step's loss: the same tensor after every run). */
    readonly value: T,
    /** Kernels in the recorded step. */
    readonly kernels: number,
  ) {}

  /**
   * Records `body` (a whole step: forward, backward, optimizer update) without running it; `run()` runs
   * it, the first time included. Host writes the body makes (the optimizer's device scalars) happen now.
   */
  static async record<T>(nn: Nn, body: () => T | Promise<T>): Promise<StaticStep<T>> {
    nn.beginCapture();
    let capture: StepCapture | null = null;
    try {
      const value = await body();
      capture = nn.endCapture();
      const { steps } = capture;
      if (steps.length === 0)
        throw new TandemError(
          'TANDEM_ERR_INVALID_ARGUMENT',
          'StaticStep.record: the step submitted no kernels',
        );
      const prepared = nn.rt.prepareSequence({
        ...nn.placement(),
        steps,
        name: `static step (${steps.length} kernels)`,
      });
      return new StaticStep(nn, prepared, [...capture.kept], value, steps.length);
    } catch (e) {
      // A step that cannot be recorded gives back what it freed (nothing will replay it).
      capture ??= nn.endCapture();
      for (const t of capture.kept) if (!t.freed) nn.rt.free(t);
      throw e;
    }
  }

  /** Runs the recorded step once more, after the writes already made to its inputs. */
  run(): TaskHandle {
    if (this.disposed)
      throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', 'StaticStep.run: the step was disposed');
    return this.nn.rt.submitPrepared(this.prepared);
  }

  /** Frees the tensors kept for the replays (the step cannot run after this). */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const t of this.kept) if (!t.freed) this.nn.rt.free(t);
  }
}
