/**
 * A task from its worker's pick to its queue's report: its data brought to the worker's memory node
 * (and pinned there until it completes), then one launch into the worker's in-order queue — or a
 * sequence's steps back to back, or one replay of a prepared sequence — and the queue's report handed
 * back to the executor as the task's completion.
 */
import { asTandemError, type TandemError } from '../core/errors.js';
import type { LaunchArg, LaunchTiming } from '../devices/device.js';
import type { Coherence } from '../memory/coherence.js';
import type { Observer } from '../obs/observer.js';
import { nowUs } from '../obs/observer.js';
import { readsFrom, writesTo } from './graph.js';
import type { SchedulerPolicy, WorkerSlot } from './policies/policy.js';
import { SequenceImpl } from './sequence.js';
import { emitTaskStart } from './task-events.js';
import { countOf, dependencyError, nth, PREPARED_RUN, type Task } from './task.js';

const NO_ARGS: LaunchArg[] = [];
const NO_IDS: number[] = [];

/** What launching needs of the executor (structural: no import of executor.ts). */
export interface LaunchHost {
  readonly policy: SchedulerPolicy;
  readonly coherence: Coherence;
  readonly observers: readonly Observer[];
  /** `task` sits in `w`'s in-order queue now (successors may follow it there). */
  launched(task: Task, w: WorkerSlot): void;
  complete(task: Task, error: TandemError | null): void;
}

export class Launcher {
  private readonly oneId = [0];
  private readonly policy: SchedulerPolicy;
  private readonly coherence: Coherence;
  private readonly observers: readonly Observer[];

  constructor(private readonly ex: LaunchHost) {
    this.policy = ex.policy;
    this.coherence = ex.coherence;
    this.observers = ex.observers;
  }

  dispatch(task: Task, w: WorkerSlot): void {
    task.state = 'dispatched';
    task.worker = w;
    w.inflight += queueWeight(task, w);
    if (task.tensors.length === 0) {
      this.launch(task, w, NO_ARGS);
      return;
    }
    const args: LaunchArg[] = [];
    let waiting = 1;
    let failed: Error | null = null;
    // Pinned against eviction until the task completes (so its own inputs never evict each other).
    for (const t of task.tensors) t.replica(w.node.index).users++;
    const arrived = (err: Error | null): void => {
      if (err && !failed) failed = err;
      if (--waiting > 0) return;
      if (failed)
        this.ex.complete(
          task,
          asTandemError(failed, 'TANDEM_ERR_INTERNAL', `preparing data for ${task.name}`),
        );
      else this.launch(task, w, args);
    };
    try {
      for (let i = 0; i < task.tensors.length; i++) {
        const t = task.tensors[i]!;
        const mode = task.modes[i]!;
        if (readsFrom(mode)) {
          waiting++;
          this.coherence.acquireRead(t, w.node, arrived);
        } else this.coherence.acquireWrite(t, w.node);
        args.push({ buffer: this.coherence.bufferOn(t, w.node), desc: t.desc });
      }
      for (let i = 0; i < task.tensors.length; i++) {
        if (writesTo(task.modes[i]!)) this.coherence.commitWrite(task.tensors[i]!, w.node);
      }
    } catch (e) {
      failed ??= e as Error;
    }
    arrived(null);
  }

  private launch(task: Task, w: WorkerSlot, args: LaunchArg[]): void {
    task.timed().startUs = nowUs();
    this.policy.onStart?.(task, w);
    if (this.observers.length) emitTaskStart(this.observers, task);
    const impl = task.kernel.impls.get(w.device.info.kind);
    try {
      if (impl instanceof SequenceImpl) this.launchSequence(task, w, args, impl);
      else
        w.queue.launch(
          {
            taskId: task.id,
            op: task.op,
            impl,
            args,
            scalars: task.scalars,
            after: this.afterIds(task),
          },
          (err, timing) => this.finishLaunch(task, err, timing),
        );
    } catch (e) {
      this.finishLaunch(task, e as Error, undefined);
      return;
    }
    this.ex.launched(task, w);
  }

  /**
   * A sequence's steps go into the queue back to back, each after the one before it (so a failed step
   * skips the rest, as in a chain); the task finishes when the last launch reports, with the first error.
   * A launch that throws ends the sequence there: the steps already queued still report, and the task
   * finishes after them (their buffers stay pinned until then).
   */
  private launchSequence(task: Task, w: WorkerSlot, args: LaunchArg[], seq: SequenceImpl): void {
    const steps = seq.steps;
    // The runtime reserved the ids after the task's for its steps (unique among all launches).
    const firstStepId = task.id + 1;
    if (task.flags & PREPARED_RUN && w.queue.replay && this.replay(task, w, args, seq, firstStepId)) return;
    let left = steps.length;
    let firstError: Error | null = null;
    let startUs = Infinity;
    let endUs = -Infinity;
    const stepDone = (err: Error | null, timing?: LaunchTiming): void => {
      if (err && !firstError) firstError = err;
      if (timing) {
        if (timing.startUs < startUs) startUs = timing.startUs;
        if (timing.endUs > endUs) endUs = timing.endUs;
      }
      if (--left > 0) return;
      const span = endUs >= startUs ? { startUs, endUs } : undefined;
      this.finishLaunch(task, firstError, span);
    };
    const prev: number[] = [];
    for (let s = 0; s < steps.length; s++) {
      const step = steps[s]!;
      const stepArgs: LaunchArg[] = new Array<LaunchArg>(step.args.length);
      for (let i = 0; i < step.args.length; i++) stepArgs[i] = args[step.args[i]!]!;
      try {
        w.queue.launch(
          {
            taskId: firstStepId + s,
            op: step.op,
            impl: step.impl,
            args: stepArgs,
            scalars: step.scalars,
            after: s === 0 ? this.afterIds(task) : prev,
          },
          stepDone,
        );
      } catch (e) {
        if (s === 0) throw e; // nothing queued: the caller fails the task as for a single launch
        firstError ??= e as Error;
        left -= steps.length - s - 1; // the steps never queued will not report
        stepDone(null);
        return;
      }
      prev[0] = firstStepId + s;
    }
  }

  /**
   * A prepared sequence's run offered to its queue as one unit (CUDA: a graph replayed with one call);
   * false when the queue declines it (then its steps go one by one).
   */
  private replay(
    task: Task,
    w: WorkerSlot,
    args: LaunchArg[],
    seq: SequenceImpl,
    firstStepId: number,
  ): boolean {
    const steps = seq.steps.map((step) => ({
      op: step.op,
      impl: step.impl,
      args: step.args.map((i) => args[i]!),
      scalars: step.scalars,
    }));
    return w.queue.replay!(
      {
        key: seq,
        taskId: task.id,
        lastStepId: firstStepId + steps.length - 1,
        steps,
        after: this.afterIds(task),
      },
      (err) => this.finishLaunch(task, err, undefined),
    );
  }

  /** Ids of in-queue predecessors; the one-predecessor case reuses a scratch array (queues copy it). */
  private afterIds(task: Task): readonly number[] {
    const preds = task.inQueuePreds;
    const n = countOf(preds);
    if (n === 0) return NO_IDS;
    if (n === 1) {
      this.oneId[0] = nth(preds, 0).id;
      return this.oneId;
    }
    return (preds as Task[]).map((p) => p.id);
  }

  private finishLaunch(task: Task, err: Error | null, timing: LaunchTiming | undefined): void {
    if (timing) {
      const tt = task.timed();
      tt.startUs = timing.startUs;
      tt.endUs = timing.endUs;
    }
    // A follower whose in-queue predecessor failed is reported as such, naming the predecessor.
    let failedPred: Task | null = null;
    const preds = task.inQueuePreds;
    for (let i = 0, n = countOf(preds); i < n; i++) {
      if (nth(preds, i).state === 'failed') {
        failedPred = nth(preds, i);
        break;
      }
    }
    const error = failedPred
      ? dependencyError(task, failedPred)
      : err
        ? asTandemError(err, 'TANDEM_ERR_KERNEL_FAILED', `${task.name} on ${task.worker!.queue.id}`)
        : null;
    this.ex.complete(task, error);
  }
}

/**
 * What a task counts for against its queue's depth: its launches. A sequence of 700 kernels is 700
 * launches in the device's queue, and a GPU driver blocks the thread that launches into a full queue.
 */
export function queueWeight(task: Task, w: WorkerSlot): number {
  const impl = task.kernel.impls.get(w.device.info.kind);
  return impl instanceof SequenceImpl ? impl.steps.length : 1;
}
