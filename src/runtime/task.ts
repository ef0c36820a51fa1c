/**
 * A task: one kernel call with its tensors (and their access modes), scalars, priority and optional
 * device constraint. Its completion promise is created lazily, so a failed task that nobody awaits
 * never becomes an unhandled rejection; its error stays readable on `error`.
 */
import type { TandemError } from '../core/errors.js';
import type { Scalars } from '../devices/device.js';
import type { AccessMode, Cost, KernelDef } from '../kernels/kernel.js';
import type { AccessRecord, Tensor } from '../memory/tensor.js';
import type { TaskShape } from './perf-model.js';
import type { WorkerSlot } from './policies/policy.js';

export type TaskState = 'waiting' | 'ready' | 'dispatched' | 'done' | 'failed';

export interface TaskHandle {
  readonly id: number;
  readonly name: string;
  readonly state: TaskState;
  readonly error: TandemError | null;
  /** Resolves when the task finished; rejects with its TandemError. */
  readonly done: Promise<void>;
  /** Where it ran ("cpu0", "cuda0"), once dispatched. */
  readonly deviceId: string | null;
}

/** Shared empty list (never pushed to): most tasks have no predecessors left to remember. */
export const NO_TASKS: Task[] = [];

export class Task implements TaskHandle, AccessRecord {
  state: TaskState = 'waiting';
  error: TandemError | null = null;
  /** Unfinished predecessors. */
  pending = 0;
  /** Predecessors not yet dispatched to a queue (for chain forwarding). */
  undispatched = 0;
  /** The one queue all dispatched-but-unfinished predecessors sit in; null when several. */
  forwardQueue: WorkerSlot | null = null;
  forwardMixed = false;
  successors: Task[] = [];
  /** Unfinished predecessors at submission (cleared at completion so finished graphs can be collected). */
  predecessors: Task[] = NO_TASKS;
  /** Predecessors that were in flight on the same queue when this task was forwarded there. */
  inQueuePreds: Task[] = NO_TASKS;
  /** In its queue (launched): followers may now be forwarded behind it. */
  launched = false;
  /** A successor already followed this task into its queue (only the first one may). */
  forwardedFollower = false;
  worker: WorkerSlot | null = null;
  /** Eligible worker indices (computed once by the executor). */
  eligible: readonly number[] = [];
  /** Increases with submission order: FIFO tie-breaker. */
  readonly seq: number;
  submitUs = 0;
  readyUs = 0;
  startUs = 0;
  endUs = 0;
  cost: Cost | null = null;
  /** The performance models' key for this task (op + data footprint), computed on first use. */
  modelShape: TaskShape | undefined = undefined;
  placement: string | undefined;
  /** Internal: result of host-side tasks (reads). */
  result: unknown = undefined;
  /** Internal: run on the main thread instead of a device queue (host reads/writes). */
  hostFn: ((task: Task) => void) | null = null;
  private promise: Promise<void> | null = null;
  private resolveFn: (() => void) | null = null;
  private rejectFn: ((e: TandemError) => void) | null = null;

  constructor(
    readonly id: number,
    readonly name: string,
    readonly def: KernelDef,
    readonly impls: ReadonlyMap<string, unknown>,
    readonly tensors: readonly Tensor[],
    readonly modes: readonly AccessMode[],
    readonly scalars: Scalars,
    readonly priority: number,
    readonly constraint: string | null,
    readonly tags: Readonly<Record<string, string>> | undefined,
  ) {
    this.seq = id;
  }

  get op(): string {
    return this.def.name;
  }

  get deviceId(): string | null {
    return this.worker?.device.info.id ?? null;
  }

  isFinished(): boolean {
    return this.state === 'done' || this.state === 'failed';
  }

  get done(): Promise<void> {
    if (!this.promise) {
      if (this.state === 'done') this.promise = Promise.resolve();
      else if (this.state === 'failed') this.promise = Promise.reject(this.error!);
      else
        this.promise = new Promise<void>((resolve, reject) => {
          this.resolveFn = resolve;
          this.rejectFn = reject;
        });
    }
    return this.promise;
  }

  settle(error: TandemError | null): void {
    if (error) {
      this.state = 'failed';
      this.error = error;
      this.rejectFn?.(error);
    } else {
      this.state = 'done';
      this.resolveFn?.();
    }
    this.resolveFn = null;
    this.rejectFn = null;
  }
}
