/**
 * The executor runs the task graph: it tracks dependencies, hands ready tasks to the scheduler
 * policy, pops work for execution queues with room, brings each task's data to the queue's memory
 * node, launches, and settles completions. It is callback-driven (no promise per task) so that the
 * runtime's own cost stays at a few microseconds per task. Beside it: launch.ts (data to the worker's
 * node, launches, replays), direct-dispatch.ts (host accesses, placed tasks), task-events.ts.
 */
import { TandemError } from '../core/errors.js';
import type { Coherence } from '../memory/coherence.js';
import type { Observer } from '../obs/observer.js';
import { nowUs } from '../obs/observer.js';
import { dispatchHost, dispatchPlaced } from './direct-dispatch.js';
import { collectPredecessors, readsFrom, type PredecessorSink } from './graph.js';
import { Launcher, queueWeight, type LaunchHost } from './launch.js';
import type { PolicyContext, SchedTask, SchedulerPolicy, WorkerSlot } from './policies/policy.js';
import { emitTaskEnd } from './task-events.js';
import {
  countOf,
  dependencyError,
  FORWARD_MIXED,
  FORWARDED_FOLLOWER,
  includesTask,
  LAUNCHED,
  nth,
  withTask,
  type Task,
} from './task.js';
import type { TaskModels } from './task-models.js';

export { dependencyError } from './task.js';

const MAX_FORWARDED_INFLIGHT = 8192;
const ignore = (): void => undefined;

export class Executor implements PredecessorSink, LaunchHost {
  private outstanding = 0;
  private idleWaiters: Array<() => void> = [];
  private pumping = false;
  private pumpAgain = false;
  private readonly launcher: Launcher;
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
    this.launcher = new Launcher(this);
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
    this.launcher.dispatch(task, w);
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
      dispatchHost(this, task);
      return;
    }
    if (task.placed) {
      dispatchPlaced(this, task);
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
            this.launcher.dispatch(t, w);
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

  /** Called back by the launcher once `task` sits in `w`'s in-order queue. */
  launched(task: Task, w: WorkerSlot): void {
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

  /** A dispatched task's end, reported by the launcher (its queue's report) or by direct dispatch. */
  complete(task: Task, error: TandemError | null): void {
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
    if (this.observers.length) emitTaskEnd(this.observers, task, error);
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
}

export type { SchedTask };
