/**
 * How an Nn context's kernels leave it: each as its own task, collected into runtime sequences
 * (sequence mode), or into a step recorded for replay (capture mode, StaticStep) — with the tensors
 * they free held back until the kernels that use them are out, and the placement every task carries.
 * A base class of Nn, apart from context.ts so that the autograd context there reads as the tape and
 * what surrounds it; the ops still call these methods on Nn.
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
import type { NnOptions } from './options.js';

/** A pass's kernels go out in chunks of 8, 16, ... 256 (see SequenceChunks). */
const NN_CHUNKS: SequenceChunks = { first: 8, max: 256 };

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

export abstract class KernelSubmitter {
  readonly device: string | undefined;
  private readonly tags: Readonly<Record<string, string>> | undefined;
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
  protected capture: StepCapture | null = null;

  constructor(
    readonly rt: Runtime,
    options: NnOptions,
  ) {
    this.device = options.device;
    this.tags = options.tags;
    this.sequences = options.sequences ?? false;
    this.collector = new SequenceCollector(rt, () => this.placement(), 'nn', SEQUENCE_HOLD_BYTES, NN_CHUNKS);
  }

  /** The dtype of parameters, activations and their gradients (the default of `tensor`). */
  abstract get dtype(): DType;

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
