/**
 * A task: one kernel call with its tensors (and their access modes), scalars, priority and optional
 * device constraint. Its completion promise is created lazily, so a failed task that nobody awaits
 * never becomes an unhandled rejection; its error stays readable on `error`.
 *
 * Up to a few 100,000 tasks can be alive at once (all submitted up front), so a task is kept small:
 * what only some tasks need (a promise, host-side work, more than one neighbour) is created on demand,
 * and lists start as shared empty arrays.
 */
import { TandemError } from '../core/errors.js';
import type { DeviceBuffer, MemoryNode, Scalars } from '../devices/device.js';
import type { AccessMode, Cost, KernelDef } from '../kernels/kernel.js';
import type { AccessRecord, Tensor } from '../memory/tensor.js';
import type { TaskShape } from './perf-model.js';
import type { WorkerSlot } from './policies/policy.js';
import type { ShareGroup } from './shares.js';

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

const NO_INDICES: readonly number[] = [];

/**
 * A task's predecessors or successors: none, one (a chain link: no array at all), or a list (fan-in,
 * fan-out). Read with `countOf`/`nth`, grown with `withTask`.
 */
export type Neighbours = Task | Task[] | null;

export function countOf(n: Neighbours): number {
  return n === null ? 0 : Array.isArray(n) ? n.length : 1;
}

/** The i-th of n (0 <= i < countOf(n)). */
export function nth(n: Neighbours, i: number): Task {
  return Array.isArray(n) ? n[i]! : n!;
}

export function includesTask(n: Neighbours, t: Task): boolean {
  return n === t || (Array.isArray(n) && n.includes(t));
}

/** `n` with `t` appended (the list itself once there are two or more). */
export function withTask(n: Neighbours, t: Task): Neighbours {
  if (n === null) return t;
  if (!Array.isArray(n)) return [n, t];
  n.push(t);
  return n;
}

/** The kernel a task runs: its definition and its implementations per device kind. */
export interface TaskKernel {
  readonly def: KernelDef;
  readonly impls: ReadonlyMap<string, unknown>;
}

/**
 * Work on several memory nodes at once (a collective over one tensor per device): the executor makes
 * each tensor valid (reads) or writable (writes) on its node, as for a kernel on that node, then calls
 * `run` with the buffers in tensor order; `done` completes the task. It never sits in a device queue:
 * it has its own streams (NCCL) and is ordered with kernels only by the tensors it touches.
 */
export interface PlacedWork {
  readonly nodes: readonly MemoryNode[];
  /** For traces: where it ran ("cuda0+cuda1") and on what ("cuda0.comm+cuda1.comm"). */
  readonly deviceId: string;
  readonly queueId: string;
  run(buffers: readonly DeviceBuffer[], done: (err: Error | null) => void): void;
}

/** Bits of `Task.flags`: in its queue (launched), so followers may now be forwarded behind it. */
export const LAUNCHED = 1;
/** A successor already followed this task into its queue (only the first one may). */
export const FORWARDED_FOLLOWER = 2;
/** Its dispatched-but-unfinished predecessors sit in more than one queue. */
export const FORWARD_MIXED = 4;
/** Its tensors are distinct (a sequence's union): no duplicate scans over them. */
export const DISTINCT_TENSORS = 8;
/** A run of a prepared sequence (submitPrepared): the same steps again, which a queue may replay. */
export const PREPARED_RUN = 16;

/** The promise of `done` and its settle functions, made only when someone asks for `done`. */
interface Completion {
  readonly promise: Promise<void>;
  resolve(): void;
  reject(e: TandemError): void;
}

/**
 * A task's timestamps (µs, runtime clock). Kept apart and made when first needed — at launch, or at
 * submission while someone observes tasks — because every number field of a long-lived object is a
 * separately allocated box that the garbage collector copies: 200,000 waiting tasks would carry
 * 800,000 boxes of zeros.
 */
export class TaskTimes {
  submitUs = 0;
  readyUs = 0;
  startUs = 0;
  endUs = 0;
}

/** What few tasks carry, kept apart (made on first need) so that the common task stays small. */
class TaskRare {
  name: string | undefined = undefined;
  constraint: string | null = null;
  tags: Readonly<Record<string, string>> | undefined = undefined;
  error: TandemError | null = null;
  placement: string | undefined = undefined;
  hostFn: ((task: Task) => void) | null = null;
  placed: PlacedWork | null = null;
  completion: Completion | null = null;
  share: ShareGroup | null = null;
}

export class Task implements TaskHandle, AccessRecord {
  state: TaskState = 'waiting';
  /** Unfinished predecessors. */
  pending = 0;
  /** Predecessors not yet dispatched to a queue (for chain forwarding). */
  undispatched = 0;
  /** LAUNCHED | FORWARDED_FOLLOWER | FORWARD_MIXED. */
  flags = 0;
  /** The one queue all dispatched-but-unfinished predecessors sit in (see FORWARD_MIXED). */
  forwardQueue: WorkerSlot | null = null;
  /** Tasks waiting for this one (cleared at completion). */
  successors: Neighbours = null;
  /** Unfinished predecessors at submission (cleared at completion so finished graphs can be collected). */
  predecessors: Neighbours = null;
  /** Predecessors that were in flight on the same queue when this task was forwarded there. */
  inQueuePreds: Neighbours = null;
  worker: WorkerSlot | null = null;
  /** Eligible worker indices (computed once by the executor). */
  eligible: readonly number[] = NO_INDICES;
  /** See TaskTimes; `timed()` makes it. */
  times: TaskTimes | null = null;
  cost: Cost | null = null;
  /** The performance models' key for this task (op + data footprint), computed on first use. */
  modelShape: TaskShape | undefined = undefined;
  private rare: TaskRare | null = null;

  constructor(
    readonly id: number,
    name: string,
    readonly kernel: TaskKernel,
    readonly tensors: readonly Tensor[],
    readonly modes: readonly AccessMode[],
    readonly scalars: Scalars,
    readonly priority: number,
    constraint: string | null,
    tags: Readonly<Record<string, string>> | undefined,
    share: ShareGroup | null = null,
  ) {
    if (name !== kernel.def.name) this.more().name = name;
    if (constraint !== null) this.more().constraint = constraint;
    if (tags !== undefined) this.more().tags = tags;
    if (share !== null) this.more().share = share;
  }

  timed(): TaskTimes {
    return (this.times ??= new TaskTimes());
  }

  private more(): TaskRare {
    return (this.rare ??= new TaskRare());
  }

  get name(): string {
    return this.rare?.name ?? this.kernel.def.name;
  }

  /** A device kind or id the task must run on. */
  get constraint(): string | null {
    return this.rare?.constraint ?? null;
  }

  /** The share group its device time is charged to; null for the runtime's default group. */
  get share(): ShareGroup | null {
    return this.rare?.share ?? null;
  }

  /** Labels carried into trace events. */
  get tags(): Readonly<Record<string, string>> | undefined {
    return this.rare?.tags;
  }

  get error(): TandemError | null {
    return this.rare?.error ?? null;
  }

  /** Why the policy placed it where it did (shown in the trace). */
  get placement(): string | undefined {
    return this.rare?.placement;
  }

  set placement(p: string | undefined) {
    if (p !== undefined || this.rare) this.more().placement = p;
  }

  /** Internal: run on the main thread instead of a device queue (host reads/writes). */
  get hostFn(): ((task: Task) => void) | null {
    return this.rare?.hostFn ?? null;
  }

  set hostFn(fn: ((task: Task) => void) | null) {
    if (fn !== null || this.rare) this.more().hostFn = fn;
  }

  /** Internal: work spanning several devices (a collective), run outside the device queues. */
  get placed(): PlacedWork | null {
    return this.rare?.placed ?? null;
  }

  set placed(w: PlacedWork | null) {
    if (w !== null || this.rare) this.more().placed = w;
  }

  /** Increases with submission order: FIFO tie-breaker. */
  get seq(): number {
    return this.id;
  }

  get def(): KernelDef {
    return this.kernel.def;
  }

  get op(): string {
    return this.kernel.def.name;
  }

  get deviceId(): string | null {
    return this.worker?.device.info.id ?? null;
  }

  isFinished(): boolean {
    return this.state === 'done' || this.state === 'failed';
  }

  get done(): Promise<void> {
    const rare = this.more();
    if (rare.completion) return rare.completion.promise;
    let promise: Promise<void>;
    if (this.state === 'done') promise = Promise.resolve();
    else if (this.state === 'failed') promise = Promise.reject(this.error!);
    else {
      let resolve!: () => void;
      let reject!: (e: TandemError) => void;
      promise = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      rare.completion = { promise, resolve, reject };
      return promise;
    }
    rare.completion = { promise, resolve: noop, reject: noop };
    return promise;
  }

  settle(error: TandemError | null): void {
    if (error) {
      this.state = 'failed';
      this.more().error = error;
      this.rare!.completion?.reject(error);
    } else {
      this.state = 'done';
      this.rare?.completion?.resolve();
    }
  }
}

function noop(): void {}

/** A task not yet finished (what freeing a tensor must wait for). */
export function unfinished(x: unknown): boolean {
  return x instanceof Task && !x.isFinished();
}

/** The error of `task`, which cannot run because its predecessor `failed` failed. */
export function dependencyError(task: Task, failed: Task): TandemError {
  return new TandemError(
    'TANDEM_ERR_DEPENDENCY_FAILED',
    `${task.name} (task ${task.id}) cannot run: it depends on ${failed.name} (task ${failed.id}), which failed` +
      (failed.error ? ` with ${failed.error.code}` : ''),
    { task: task.id, failedTask: failed.id, failedName: failed.name, cause: failed.error?.code },
    { cause: failed.error },
  );
}
