/**
 * Scheduler policies decide where and in which order ready tasks run. The executor pushes a task
 * when its dependencies are done and pops for a worker (an execution queue) when it has room.
 * Learned, transfer-aware policies plug in through the same interface and the context's estimates.
 */
import type { Device, ExecQueue, MemoryNode } from '../../devices/device.js';
import type { Cost } from '../../kernels/kernel.js';
import type { ShareGroup } from '../shares.js';

export interface WorkerSlot {
  readonly index: number;
  readonly queue: ExecQueue;
  readonly device: Device;
  readonly node: MemoryNode;
  /** Launches outstanding in this queue. */
  inflight: number;
}

/** The view of a task a policy gets. */
export interface SchedTask {
  readonly id: number;
  readonly op: string;
  readonly priority: number;
  readonly seq: number;
  readonly eligible: readonly number[];
  /** Who its device time is charged to (fair sharing); null or absent for the default group. */
  readonly share?: ShareGroup | null;
  /** Why it was placed where it was; shown in the trace. */
  placement: string | undefined;
}

export interface PolicyContext {
  readonly workers: readonly WorkerSlot[];
  /** Runtime clock in microseconds. */
  now(): number;
  /** Flops and bytes of a task from its op's cost model. */
  cost(task: SchedTask): Cost;
  /** Bytes of the task's inputs that are not yet valid on the worker's memory node. */
  missingBytes(task: SchedTask, worker: WorkerSlot): number;
  /** Ask the executor to pop for a worker that may have become able to take work. */
  wake(): void;
  /** Expected run time (µs) of the task on the worker from the performance models; NaN when unknown. */
  expectedUs(task: SchedTask, worker: WorkerSlot): number;
  /** Expected time (µs) to bring the task's missing inputs to the worker's memory node (bus model). */
  transferUs(task: SchedTask, worker: WorkerSlot): number;
  /** The task will run on `worker`: start moving its inputs to that node now (overlaps the queue wait). */
  prefetch(task: SchedTask, worker: WorkerSlot): void;
  /** True while someone observes tasks (a trace): only then is explaining placements worth its cost. */
  observed(): boolean;
}

export interface SchedulerPolicy {
  readonly name: string;
  /** Whether a task may follow its predecessors into their in-order queue before they finish. */
  readonly forwardChains: boolean;
  attach(ctx: PolicyContext): void;
  push(task: SchedTask): void;
  pop(worker: WorkerSlot): SchedTask | undefined;
  /** Tasks pushed and not yet popped. */
  pending(): number;
  onStart?(task: SchedTask, worker: WorkerSlot): void;
  onComplete?(task: SchedTask, worker: WorkerSlot, durationUs: number, ok: boolean): void;
  /**
   * Whether `task` may follow its predecessors into `worker`'s queue now (chain forwarding); absent:
   * yes. Refused, it waits for them to finish and goes through push/pop.
   */
  readonly admitForward?: ((task: SchedTask, worker: WorkerSlot) => boolean) | undefined;
  /** A task that bypassed push/pop (chain forwarding) now occupies `worker`. */
  onForward?(task: SchedTask, worker: WorkerSlot): void;
}
