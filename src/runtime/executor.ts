/**
 * The executor runs the task graph: it tracks dependencies, hands ready tasks to the scheduler
 * policy, pops work for execution queues with room, brings each task's data to the queue's memory
 * node, launches, and settles completions. It is callback-driven (no promise per task) so that the
 * runtime's own cost stays at a few microseconds per task.
 */
import { TandemError, asTandemError } from '../core/errors.js';
import type { DeviceBuffer, LaunchArg, LaunchTiming } from '../devices/device.js';
import type { Coherence } from '../memory/coherence.js';
import type { Observer, TaskEvent } from '../obs/observer.js';
import { nowUs } from '../obs/observer.js';
import { collectPredecessors, readsFrom, writesTo, type PredecessorSink } from './graph.js';
import { SequenceImpl } from './sequence.js';
import type { PolicyContext, SchedTask, SchedulerPolicy, WorkerSlot } from './policies/policy.js';
import {
  countOf,
  FORWARD_MIXED,
  FORWARDED_FOLLOWER,
  includesTask,
  LAUNCHED,
  PREPARED_RUN,
  nth,
  withTask,
  type Task,
} from './task.js';
import type { TaskModels } from './task-models.js';

const NO_ARGS: LaunchArg[] = [];
const MAX_FORWARDED_INFLIGHT = 8192;
const NO_IDS: number[] = [];
const ignore = (): void => undefined;

export class Executor implements PredecessorSink {
  private outstanding = 0;
  private idleWaiters: Array<() => void> = [];
  private pumping = false;
  private pumpAgain = false;
  private readonly oneId = [0];
  private forwardWork: Task[] = [];
  private forwarding = false;
  /** The first failed predecessor met while linking the task being submitted. */
  private failedPred: Task | null = null;
  tasksCompleted = 0;
  tasksFailed = 0;
  /**
   * Optional admission check by memory: 'wait' when the worker's node has no room for the task's
   * data yet but room is being made (write-backs, tasks in flight there). Such tasks go back to the
   * policy when memory frees up, instead of failing with TANDEM_ERR_OUT_OF_MEMORY.
   */
  memoryGate: ((task: Task, w: WorkerSlot) => 'ok' | 'wait') | null = null;
  private deferred: Task[] = [];

  constructor(
    readonly workers: readonly WorkerSlot[],
    readonly policy: SchedulerPolicy,
    readonly coherence: Coherence,
    readonly observers: Observer[],
    readonly models: TaskModels | null = null,
  ) {
    const ctx: PolicyContext = {
      workers,
      now: nowUs,
      cost: (t) => (t as Task).cost ?? { flops: 0, bytes: 0 },
      missingBytes: (t, w) => {
        const task = t as Task;
        let bytes = 0;
        for (let i = 0; i < task.tensors.length; i++) {
          if (readsFrom(task.modes[i]!)) bytes += coherence.missingBytes(task.tensors[i]!, w.node);
        }
        return bytes;
      },
      wake: () => this.pump(),
      expectedUs: (t, w) => (models ? models.expectedUs(t as Task, w) : NaN),
      transferUs: (t, w) => (models ? models.transferUs(t as Task, w) : 0),
      prefetch: (t, w) => this.prefetch(t as Task, w),
      observed: () => this.observers.length > 0,
    };
    policy.attach(ctx);
  }

  get pendingTasks(): number {
    return this.outstanding;
  }

  submit(task: Task, explicitDeps: readonly Task[]): void {
    // Submission and ready times are for observers only: unobserved, a waiting task keeps no clock.
    if (this.observers.length) task.timed().submitUs = nowUs();
    this.outstanding++;
    this.failedPred = null;
    if (task.tensors.length || explicitDeps.length) collectPredecessors(task, explicitDeps, this);
    const failedPred = this.failedPred;
    this.failedPred = null;
    if (failedPred) {
      // Already-registered successors edges are harmless: a failed task ignores completions.
      this.failCascade(task, dependencyError(task, failedPred));
      return;
    }
    if (task.pending === 0) this.makeReady(task);
    else this.offerForward(task);
  }

  /** Links `task` to one predecessor (called back by collectPredecessors; `p` may repeat). */
  addPredecessor(task: Task, p: Task): void {
    if (p === task || p.state === 'done') return;
    if (p.state === 'failed') {
      this.failedPred ??= p;
      return;
    }
    if (includesTask(task.predecessors, p)) return;
    task.predecessors = withTask(task.predecessors, p);
    p.successors = withTask(p.successors, task);
    task.pending++;
    if (p.flags & LAUNCHED) this.mergeForward(task, p.worker!);
    else task.undispatched++;
  }

  private mergeForward(task: Task, w: WorkerSlot): void {
    if (task.forwardQueue === null) task.forwardQueue = w;
    else if (task.forwardQueue !== w) task.flags |= FORWARD_MIXED;
  }

  /**
   * Chain forwarding: a task whose unfinished predecessors all sit in one in-order queue may follow
   * them there at once (its data is, or will be, on that node) instead of waiting a round trip for
   * their completion. Only the first such follower of a predecessor goes, so fan-outs still spread.
   */
  private maybeForward(task: Task): void {
    const w = task.forwardQueue;
    if (
      !this.policy.forwardChains ||
      task.state !== 'waiting' ||
      task.undispatched !== 0 ||
      task.flags & FORWARD_MIXED ||
      !w ||
      task.hostFn ||
      task.placed ||
      !task.eligible.includes(w.index) ||
      // Bound what runs ahead in one queue; past this, followers wait for completions as usual.
      w.inflight >= MAX_FORWARDED_INFLIGHT
    )
      return;
    // All unfinished predecessors must be in w, and w must be free for a follower of each.
    const all = task.predecessors;
    const n = countOf(all);
    let inFlight = 0;
    for (let i = 0; i < n; i++) {
      const p = nth(all, i);
      if (p.isFinished()) continue;
      if (p.worker !== w || p.flags & FORWARDED_FOLLOWER) return;
      inFlight++;
    }
    for (let i = 0; i < task.tensors.length; i++) {
      if (readsFrom(task.modes[i]!) && !this.coherence.isLocal(task.tensors[i]!, w.node)) return;
    }
    // A policy sharing devices between groups may want this task to wait its turn instead.
    const admit = this.policy.admitForward;
    if (admit !== undefined && !admit(task, w)) return;
    let preds = all;
    if (inFlight < n) {
      preds = null;
      for (let i = 0; i < n; i++) if (!nth(all, i).isFinished()) preds = withTask(preds, nth(all, i));
    }
    for (let i = 0; i < inFlight; i++) nth(preds, i).flags |= FORWARDED_FOLLOWER;
    task.inQueuePreds = preds;
    if (this.observers.length) task.timed().readyUs = nowUs();
    this.policy.onForward?.(task, w);
    this.dispatch(task, w);
  }

  /**
   * Starts copying a placed task's inputs to its worker's node. Only while the node has room: a
   * prefetch never evicts (that is how prefetching thrashes under memory pressure); errors are
   * ignored because the dispatch-time fetch retries and reports them.
   */
  private prefetch(task: Task, w: WorkerSlot): void {
    const mem = this.coherence.memory;
    for (let i = 0; i < task.tensors.length; i++) {
      const t = task.tensors[i]!;
      if (!readsFrom(task.modes[i]!) || this.coherence.isLocal(t, w.node) || t.lostReason) continue;
      if (mem.usedBytes(w.node) + t.bytes > mem.budgetBytes(w.node)) return;
      this.coherence.acquireRead(t, w.node, ignore);
    }
  }

  private makeReady(task: Task): void {
    task.state = 'ready';
    if (this.observers.length) task.timed().readyUs = nowUs();
    if (task.hostFn) {
      this.dispatchHost(task);
      return;
    }
    if (task.placed) {
      this.dispatchPlaced(task);
      return;
    }
    if (task.eligible.length === 0) {
      this.failCascade(
        task,
        new TandemError(
          'TANDEM_ERR_NO_DEVICE',
          // The dtypes say why when a kernel exists but its devices decline them (f16 on WebGPU's f32-only kernels).
          `no device can run ${task.name} (op ${task.op}${task.constraint ? `, device ${task.constraint}` : ''}) ` +
            `on ${task.tensors.map((t) => t.dtype).join(', ')}`,
        ),
      );
      return;
    }
    this.policy.push(task);
    this.pump();
  }

  /** Fill every queue that has room from the policy. Re-entrant calls are folded into the loop. */
  pump(): void {
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.pumpAgain = false;
        if (this.policy.pending() === 0) break;
        for (const w of this.workers) {
          while (w.inflight < w.queue.depth) {
            const t = this.policy.pop(w) as Task | undefined;
            if (!t) break;
            // No room on w's node yet, but room is being made: try again when memory frees up.
            if (this.memoryGate !== null && t.tensors.length > 0 && this.memoryGate(t, w) === 'wait') {
              this.deferred.push(t);
              break;
            }
            this.dispatch(t, w);
          }
        }
      } while (this.pumpAgain);
    } finally {
      this.pumping = false;
    }
  }

  /** Gives tasks deferred for memory back to the policy (memory was freed) and pumps. */
  retryDeferred(): void {
    if (this.deferred.length === 0) return;
    const d = this.deferred;
    this.deferred = [];
    for (const t of d) this.policy.push(t);
    this.pump();
  }

  private dispatch(task: Task, w: WorkerSlot): void {
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
        this.complete(task, asTandemError(failed, 'TANDEM_ERR_INTERNAL', `preparing data for ${task.name}`));
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
    if (this.observers.length) this.emitStart(task);
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
    task.flags |= LAUNCHED;
    // Now that it sits in its in-order queue, successors may follow it there.
    const succ = task.successors;
    for (let i = 0, n = countOf(succ); i < n; i++) {
      const s = nth(succ, i);
      if (s.state !== 'waiting') continue;
      s.undispatched--;
      this.mergeForward(s, w);
      this.offerForward(s);
    }
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

  /**
   * Forwarding runs from a work list, not by recursion: launching a follower may release its own
   * follower, and a chain of 100,000 tasks must not become 100,000 stack frames.
   */
  private offerForward(task: Task): void {
    this.forwardWork.push(task);
    if (this.forwarding) return;
    this.forwarding = true;
    try {
      for (let i = 0; i < this.forwardWork.length; i++) this.maybeForward(this.forwardWork[i]!);
    } finally {
      // Reused: a fresh list per submitted task would be garbage per task.
      if (this.forwardWork.length > 1024) this.forwardWork = [];
      else this.forwardWork.length = 0;
      this.forwarding = false;
    }
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
    this.complete(task, error);
  }

  private dispatchHost(task: Task): void {
    task.state = 'dispatched';
    let waiting = 1;
    let failed: Error | null = null;
    const host = this.coherence.host;
    const arrived = (err: Error | null): void => {
      if (err && !failed) failed = err;
      if (--waiting > 0) return;
      if (failed)
        return this.complete(task, asTandemError(failed, 'TANDEM_ERR_INTERNAL', `host access ${task.name}`));
      try {
        task.timed().startUs = nowUs();
        task.hostFn!(task);
        this.complete(task, null);
      } catch (e) {
        this.complete(task, asTandemError(e, 'TANDEM_ERR_INTERNAL', `host access ${task.name}`));
      }
    };
    try {
      for (let i = 0; i < task.tensors.length; i++) {
        const t = task.tensors[i]!;
        if (readsFrom(task.modes[i]!)) {
          waiting++;
          this.coherence.acquireRead(t, host, arrived);
        } else this.coherence.acquireWrite(t, host);
      }
      for (let i = 0; i < task.tensors.length; i++) {
        if (writesTo(task.modes[i]!)) this.coherence.commitWrite(task.tensors[i]!, host);
      }
    } catch (e) {
      failed ??= e as Error;
    }
    arrived(null);
  }

  /**
   * A task over several devices (a collective): each tensor made valid or writable on its own node and
   * pinned there, as for a kernel, then the work runs on its own streams; completion is its callback.
   */
  private dispatchPlaced(task: Task): void {
    task.state = 'dispatched';
    const work = task.placed!;
    const buffers: DeviceBuffer[] = [];
    let waiting = 1;
    let failed: Error | null = null;
    const tensors = task.tensors;
    for (let i = 0; i < tensors.length; i++) tensors[i]!.replica(work.nodes[i]!.index).users++;
    const finish = (err: TandemError | null): void => {
      for (let i = 0; i < tensors.length; i++) tensors[i]!.replica(work.nodes[i]!.index).users--;
      this.complete(task, err);
    };
    const arrived = (err: Error | null): void => {
      if (err && !failed) failed = err;
      if (--waiting > 0) return;
      if (failed)
        return finish(asTandemError(failed, 'TANDEM_ERR_INTERNAL', `preparing data for ${task.name}`));
      task.timed().startUs = nowUs();
      if (this.observers.length) this.emitStart(task);
      try {
        work.run(buffers, (e) => finish(e ? asTandemError(e, 'TANDEM_ERR_KERNEL_FAILED', task.name) : null));
      } catch (e) {
        finish(asTandemError(e, 'TANDEM_ERR_KERNEL_FAILED', task.name));
      }
    };
    try {
      for (let i = 0; i < tensors.length; i++) {
        const t = tensors[i]!;
        const node = work.nodes[i]!;
        if (readsFrom(task.modes[i]!)) {
          waiting++;
          this.coherence.acquireRead(t, node, arrived);
        } else this.coherence.acquireWrite(t, node);
        buffers.push(this.coherence.bufferOn(t, node));
      }
      for (let i = 0; i < tensors.length; i++)
        if (writesTo(task.modes[i]!)) this.coherence.commitWrite(tensors[i]!, work.nodes[i]!);
    } catch (e) {
      failed ??= e as Error;
    }
    arrived(null);
  }

  private complete(task: Task, error: TandemError | null): void {
    if (task.isFinished()) return;
    const tt = task.timed();
    tt.endUs = tt.endUs > tt.startUs ? tt.endUs : nowUs();
    const us = tt.endUs - tt.startUs;
    const w = task.worker;
    if (w) {
      w.inflight -= queueWeight(task, w);
      for (const t of task.tensors) t.replica(w.node.index).users--;
      if (!error && this.models) this.models.record(task, w, us);
      const share = task.share;
      if (share !== null) {
        // Device time per share group (shown as usage; failed tasks used the device too).
        share.deviceUs += us > 0 ? us : 0;
        share.tasks++;
      }
    }
    if (this.observers.length) this.emit(task, error);
    if (w) this.policy.onComplete?.(task, w, us, !error);
    if (w && this.deferred.length) {
      const d = this.deferred;
      this.deferred = [];
      for (const t of d) this.policy.push(t);
    }
    if (error) {
      this.failCascade(task, error);
    } else {
      task.settle(null);
      this.finished(task);
      const succ = task.successors;
      task.successors = null;
      for (let i = 0, n = countOf(succ); i < n; i++) {
        const s = nth(succ, i);
        if (--s.pending === 0 && s.state === 'waiting') this.makeReady(s);
      }
    }
    task.predecessors = null;
    task.inQueuePreds = null;
    this.pump();
  }

  /** Fail a task and every successor that has not been dispatched (iteratively: chains are long). */
  private failCascade(first: Task, error: TandemError): void {
    const work: Array<[Task, TandemError]> = [[first, error]];
    while (work.length > 0) {
      const [t, err] = work.pop()!;
      if (t.isFinished()) continue;
      if (t.state === 'dispatched' && t !== first) continue; // its queue reports it
      t.settle(err);
      this.finished(t);
      const succ = t.successors;
      t.successors = null;
      for (let i = 0, n = countOf(succ); i < n; i++) {
        const s = nth(succ, i);
        if (s.state === 'waiting' || s.state === 'ready') work.push([s, dependencyError(s, t)]);
      }
    }
  }

  private finished(t: Task): void {
    if (t.state === 'failed') this.tasksFailed++;
    else this.tasksCompleted++;
    if (--this.outstanding === 0 && this.idleWaiters.length) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  idle(): Promise<void> {
    if (this.outstanding === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private emitStart(task: Task): void {
    const e = this.event(task, null);
    for (const o of this.observers) o.onTaskStart?.(e);
  }

  private emit(task: Task, error: TandemError | null): void {
    const e = this.event(task, error);
    for (const o of this.observers) o.onTaskEnd?.(e);
  }

  private event(task: Task, error: TandemError | null): TaskEvent {
    const w = task.worker;
    const tt = task.times;
    const startUs = tt?.startUs ?? 0;
    return {
      taskId: task.id,
      name: task.name,
      op: task.op,
      deviceId: w ? w.device.info.id : (task.placed?.deviceId ?? 'host'),
      queueId: w ? w.queue.id : (task.placed?.queueId ?? 'host'),
      // A task submitted before its observer came has no submission or ready time: its start stands in.
      submitUs: tt?.submitUs || tt?.readyUs || startUs,
      readyUs: tt?.readyUs || startUs,
      startUs,
      endUs: tt?.endUs ?? 0,
      ok: !error,
      ...(error ? { errorCode: error.code } : {}),
      ...(task.placement ? { placement: task.placement } : {}),
      flops: task.cost?.flops ?? 0,
      bytes: task.cost?.bytes ?? 0,
      ...(task.tags ? { tags: task.tags } : {}),
    };
  }
}

export function dependencyError(task: Task, failed: Task): TandemError {
  return new TandemError(
    'TANDEM_ERR_DEPENDENCY_FAILED',
    `${task.name} (task ${task.id}) cannot run: it depends on ${failed.name} (task ${failed.id}), which failed` +
      (failed.error ? ` with ${failed.error.code}` : ''),
    { task: task.id, failedTask: failed.id, failedName: failed.name, cause: failed.error?.code },
    { cause: failed.error },
  );
}

export type { SchedTask };

/**
 * What a task counts for against its queue's depth: its launches. A sequence of 700 kernels is 700
 * launches in the device's queue, and a GPU driver blocks the thread that launches into a full queue.
 */
function queueWeight(task: Task, w: WorkerSlot): number {
  const impl = task.kernel.impls.get(w.device.info.kind);
  return impl instanceof SequenceImpl ? impl.steps.length : 1;
}
