/**
 * Collects kernel calls for one runtime sequence (`rt.submitSequence`) and holds back the frees of
 * tensors those calls still read until they are submitted: a layer that frees an intermediate as soon
 * as its last reader is recorded (nn's backward pass, the ONNX executor) must not free it before that
 * reader has gone to the runtime. Past `holdBytes` of held tensors the calls so far go out, so the
 * memory held beyond a task per kernel stays bounded.
 */
import type { Tensor } from '../memory/tensor.js';
import type { SequenceRequest, SequenceStep } from './sequence.js';
import type { TaskHandle } from './task.js';

/** What a collector needs of the runtime. */
export interface CollectorRuntime {
  submitSequence(req: SequenceRequest): TaskHandle;
  free(t: Tensor): void;
}

/** Held-back bytes after which the collected calls are submitted (the default of every user). */
export const SEQUENCE_HOLD_BYTES = 256 * 2 ** 20;

export class SequenceCollector {
  private steps: SequenceStep[] = [];
  private readonly held = new Set<Tensor>();
  private heldBytes = 0;

  constructor(
    private readonly rt: CollectorRuntime,
    /** The sequence's own fields at submission (device, priority, tags), and a label for its name. */
    private readonly request: () => Omit<SequenceRequest, 'steps' | 'name'>,
    private readonly label: string,
    private readonly holdBytes = SEQUENCE_HOLD_BYTES,
  ) {}

  /** Calls collected and not yet submitted. */
  get pending(): number {
    return this.steps.length;
  }

  push(step: SequenceStep): void {
    this.steps.push(step);
  }

  /** Frees `t` now when nothing is pending, else once the pending calls are submitted. */
  free(t: Tensor): void {
    if (t.freed || this.held.has(t)) return;
    if (this.steps.length === 0) {
      this.rt.free(t);
      return;
    }
    this.held.add(t);
    this.heldBytes += t.bytes;
    if (this.heldBytes >= this.holdBytes) this.flush();
  }

  /** Submits the collected calls as one sequence (null when there were none), then frees what was held. */
  flush(): TaskHandle | null {
    let task: TaskHandle | null = null;
    if (this.steps.length > 0) {
      const steps = this.steps;
      this.steps = [];
      task = this.rt.submitSequence({
        ...this.request(),
        steps,
        name: `${this.label} (${steps.length} kernels)`,
      });
    }
    this.releaseHeld();
    return task;
  }

  /** Hands over the collected calls (for `rt.prepareSequence`) instead of submitting them. */
  take(): SequenceStep[] {
    const steps = this.steps;
    this.steps = [];
    return steps;
  }

  /** Forgets the collected calls without submitting them (their pass failed) and frees what they held. */
  drop(): void {
    this.steps = [];
    this.releaseHeld();
  }

  private releaseHeld(): void {
    for (const t of this.held) if (!t.freed) this.rt.free(t);
    this.held.clear();
    this.heldBytes = 0;
  }
}
