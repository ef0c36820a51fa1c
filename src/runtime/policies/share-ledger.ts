/**
 * The accounts behind fair sharing between share groups, kept apart from where a policy holds its ready
 * tasks so every policy can order by them: the central queues (fair-share.ts, for eager and prio), the
 * per-worker queues of dmda/dmdas (share-queues.ts) and the deques of ws. What it keeps:
 *
 * - each group's pass: the device time charged to it divided by its weight (stride scheduling over
 *   device time). A task is charged its expected run time (performance models) when a worker takes it
 *   and corrected to its measured device time when it ends, so a group of long tasks falls behind one of
 *   short tasks, not the reverse;
 * - a virtual clock that follows the least pass of the active groups (never going back): a group that
 *   becomes active starts there less a bounded credit, FAIR_CREDIT_US of device time (as Linux CFS places
 *   a waking task), so a short job of an idle tenant runs ahead of a backlog for up to that much, then
 *   shares by weight;
 * - the expected work each worker holds in its device queue, so a policy can keep that short
 *   (FAIR_INFLIGHT_US) while groups compete: a newcomer never waits behind a deep queue that another
 *   group filled alone.
 * A policy asks `before(a, b)` to choose between groups and tells the ledger when a task enters
 * (`queued`), leaves for a worker (`taken`, `forwarded`) and ends (`completed`).
 */
import { ShareGroup } from '../shares.js';
import type { PolicyContext, SchedTask, WorkerSlot } from './policy.js';

/**
 * Expected work a worker may hold in its queue while groups compete (µs). 1 ms keeps a CPU worker fed
 * with tiny tasks; a task longer than that is held alone (a newcomer waits for at most that one).
 */
export const FAIR_INFLIGHT_US = 1000;

/**
 * Device time (µs, divided by the group's weight in pass units) a group that becomes active may run
 * ahead of the groups already active: room for a short job to go first.
 */
export const FAIR_CREDIT_US = 50_000;

interface Charge {
  /** Expected run time (µs); NaN when unknown (then only the measured time is charged, at the end). */
  readonly us: number;
  readonly worker: number;
}

export class ShareLedger {
  /** The policy's own stand-in for tasks that name no group. */
  readonly defaultGroup = new ShareGroup('(default)', 1, null);
  /** Groups with tasks waiting in the policy or running. */
  readonly active: ShareGroup[] = [];
  /** Virtual time: the least pass of the active groups, as last seen (monotonic). */
  private vt = 0;
  /** Expected work handed to each worker's queue and not finished (µs). */
  private readonly inflightUs: Float64Array;
  /** What each task taken was charged, and where it went. */
  private readonly charged = new Map<SchedTask, Charge>();

  constructor(
    private readonly ctx: PolicyContext,
    /** Tasks of the default group the policy already holds when sharing begins. */
    defaultPending = 0,
  ) {
    this.inflightUs = new Float64Array(ctx.workers.length);
    this.defaultGroup.pending = defaultPending;
    if (defaultPending > 0) this.active.push(this.defaultGroup);
  }

  groupOf(task: SchedTask): ShareGroup {
    return task.share ?? this.defaultGroup;
  }

  /** True when group `a` goes before group `b`: less pass, then fewer tasks running. */
  before(a: ShareGroup, b: ShareGroup): boolean {
    return a.pass < b.pass || (a.pass === b.pass && a.running < b.running);
  }

  /** Moves the virtual clock up to the least pass of the active groups (call when choosing). */
  advanceClock(): void {
    let least = Infinity;
    for (const g of this.active) if (g.pass < least) least = g.pass;
    if (least !== Infinity && least > this.vt) this.vt = least;
  }

  /** Whether the worker's queue already holds its bound of expected work (take nothing more now). */
  full(worker: WorkerSlot): boolean {
    return worker.inflight > 0 && this.inflightUs[worker.index]! >= FAIR_INFLIGHT_US;
  }

  /** A ready task enters the policy (a handed-back one gives its charge back first). */
  queued(task: SchedTask): ShareGroup {
    const g = this.groupOf(task);
    const c = this.charged.get(task);
    if (c !== undefined) {
      this.release(task, g, c);
      this.deactivateIfIdle(g);
    }
    this.activate(g);
    g.pending++;
    return g;
  }

  /** A task held by the policy goes to `worker`. */
  taken(task: SchedTask, worker: WorkerSlot): void {
    const g = this.groupOf(task);
    g.pending--;
    this.charge(task, g, worker);
  }

  /** A task that followed its predecessor into `worker`'s queue (chain forwarding) runs there now. */
  forwarded(task: SchedTask, worker: WorkerSlot): void {
    const g = this.groupOf(task);
    this.activate(g);
    this.charge(task, g, worker);
  }

  /**
   * May `task` follow its predecessors into `worker`'s queue? Only within the bound on queued work,
   * and while groups compete, only when no other group with tasks waiting is further behind.
   */
  admitForward(task: SchedTask, worker: WorkerSlot): boolean {
    if (this.inflightUs[worker.index]! >= FAIR_INFLIGHT_US) return false;
    if (this.active.length < 2) return true;
    const g = this.groupOf(task);
    for (const o of this.active) if (o !== g && o.pending > 0 && o.pass < g.pass) return false;
    return true;
  }

  completed(task: SchedTask, durationUs: number): void {
    const g = this.groupOf(task);
    const us = durationUs > 0 ? durationUs : 0;
    const c = this.charged.get(task);
    if (c === undefined) {
      // Taken before sharing began: its device time still counts.
      g.pass += us / g.weight;
      return;
    }
    this.release(task, g, c);
    g.pass += us / g.weight;
    this.deactivateIfIdle(g);
  }

  /** Before a group's first task (waiting or running): it joins at the virtual time less its credit. */
  private activate(g: ShareGroup): void {
    if (g.pending + g.running > 0) return;
    this.advanceClock();
    const earliest = this.vt - FAIR_CREDIT_US / g.weight;
    if (g.pass < earliest) g.pass = earliest;
    this.active.push(g);
  }

  private deactivateIfIdle(g: ShareGroup): void {
    if (g.pending + g.running > 0) return;
    const i = this.active.indexOf(g);
    if (i >= 0) this.active.splice(i, 1);
  }

  private charge(task: SchedTask, g: ShareGroup, worker: WorkerSlot): void {
    const e = this.ctx.expectedUs(task, worker);
    this.charged.set(task, { us: e, worker: worker.index });
    g.running++;
    // Unknown length: the queue holds it alone (it counts as a full bound); charged when it ends.
    this.inflightUs[worker.index]! += Number.isNaN(e) ? FAIR_INFLIGHT_US : e;
    if (!Number.isNaN(e)) g.pass += e / g.weight;
  }

  /** Takes back what `charge` added (the measured time, if any, is the caller's to add). */
  private release(task: SchedTask, g: ShareGroup, c: Charge): void {
    this.charged.delete(task);
    g.running--;
    const known = !Number.isNaN(c.us);
    const held = this.inflightUs[c.worker]! - (known ? c.us : FAIR_INFLIGHT_US);
    this.inflightUs[c.worker] = held > 0 ? held : 0;
    if (known) g.pass -= c.us / g.weight;
  }
}
