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

/**
 * Growing chunks: the first `first` calls after a flush go out as soon as they are collected, then
 * twice as many, and so on up to `max`. A layer that records a whole pass before it flushes (nn's
 * forward and backward) would otherwise leave an idle device waiting for the host's recording of the
 * pass; small chunks first start it early, larger ones later keep the per-task cost low.
 */
export interface SequenceChunks {
  readonly first: number;
  readonly max: number;
}

export class SequenceCollector {
  private steps: SequenceStep[] = [];
  private readonly held = new Set<Tensor>();
  private heldBytes = 0;
  /** Collected calls at which the next chunk goes out (Infinity without chunks). */
  private nextChunk: number;

  constructor(
    private readonly rt: CollectorRuntime,
    /** The sequence's own fields at submission (device, priority, tags), and a label for its name. */
    private readonly request: () => Omit<SequenceRequest, 'steps' | 'name'>,
    private readonly label: string,
    private readonly holdBytes = SEQUENCE_HOLD_BYTES,
    private readonly chunks: SequenceChunks | null = null,
  ) {
    this.nextChunk = chunks?.first ?? Infinity;
  }

  /** Calls collected and not yet submitted. */
  get pending(): number {
    return this.steps.length;
  }

  push(step: SequenceStep): void {
    this.steps.push(step);
    if (this.steps.length >= this.nextChunk) {
      const next = Math.min(this.nextChunk * 2, this.chunks!.max);
      this.flush();
      this.nextChunk = next;
    }
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
    this.nextChunk = this.chunks?.first ?? Infinity;
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
    this.nextChunk = this.chunks?.first ?? Infinity;
    const steps = this.steps;
    this.steps = [];
    return steps;
  }

  /** Forgets the collected calls without submitting them (their pass failed) and frees what they held. */
  drop(): void {
    this.nextChunk = this.chunks?.first ?? Infinity;
    this.steps = [];
    this.releaseHeld();
  }

  private releaseHeld(): void {
    for (const t of this.held) if (!t.freed) this.rt.free(t);
    this.held.clear();
    this.heldBytes = 0;
  }
}
