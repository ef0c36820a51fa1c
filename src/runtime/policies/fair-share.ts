/**
 * Fair sharing of devices between share groups, at the task level (stride scheduling over device
 * time, as Kubernetes' and Slurm's fair share do over their own units):
 *
 * - Every group's ready tasks wait in their own lane. A free worker takes the next task from the
 *   active group with the least pass: the device time charged to it divided by its weight. A task is
 *   charged its expected run time (performance models) when it is taken and corrected to its measured
 *   device time when it ends, so a group of long tasks falls behind one of short tasks, not the reverse.
 * - A virtual clock follows the least pass of the active groups (never going back). A group that
 *   becomes active starts at that clock less a bounded credit, FAIR_CREDIT_US of device time (as
 *   Linux CFS places a waking task): a short job of a tenant that was idle runs ahead of a long-running
 *   backlog for up to that much device time, then shares by weight; idle time beyond that earns
 *   nothing, and device time a group used while it was alone costs it nothing later. (Without the
 *   clock, a group that had worked alone and paused for a moment would rejoin behind a newcomer by all
 *   its past work; without the credit, a 45 ms job beside a backlog would get half the device and
 *   take twice as long plus waits.)
 * - A worker holds at most FAIR_INFLIGHT_US of expected work (or one task whose length is unknown) in
 *   its device queue, chain followers included: otherwise a group that worked alone and filled a deep
 *   queue (a CUDA stream takes 256 launches) would make a newcomer wait behind all of it whatever the
 *   choice. The rest waits here, where the choice is made. This holds from the first task that names a
 *   group on; a runtime without groups keeps its queues' full depth.
 */
import { ShareGroup } from '../shares.js';
import type { Lane } from './lane.js';
import type { PolicyContext, SchedTask, WorkerSlot } from './policy.js';

/**
 * Expected work a worker may hold in its queue while groups compete (µs). 1 ms keeps a CPU worker fed
 * with tiny tasks; a task longer than that is held alone (a newcomer waits for at most that one).
 */
export const FAIR_INFLIGHT_US = 1000;

interface Charge {
  /** Expected run time (µs); NaN when unknown (then only the measured time is charged, at the end). */
  readonly us: number;
  readonly worker: number;
}

/**
 * Device time (µs, divided by the group's weight in pass units) a group that becomes active may run
 * ahead of the groups already active: room for a short job to go first.
 */
export const FAIR_CREDIT_US = 50_000;

export class FairShare {
  /** The policy's own stand-in for tasks that name no group. */
  private readonly defaultGroup = new ShareGroup('(default)', 1, null);
  private readonly lanes = new Map<ShareGroup, Lane>();
  /** Groups with tasks waiting here or running. */
  private readonly active: ShareGroup[] = [];
  /** Virtual time: the least pass of the active groups, as last seen (monotonic). */
  private vt = 0;
  /** Expected work handed to each worker's queue by this policy and not finished (µs). */
  private readonly inflightUs: Float64Array;
  /** What each task taken here was charged, and where it went. */
  private readonly charged = new Map<SchedTask, Charge>();

  constructor(
    private readonly ctx: PolicyContext,
    defaultLane: Lane,
    private readonly newLane: () => Lane,
  ) {
    this.inflightUs = new Float64Array(ctx.workers.length);
    this.lanes.set(this.defaultGroup, defaultLane);
    this.defaultGroup.pending = defaultLane.count;
    if (defaultLane.count > 0) this.active.push(this.defaultGroup);
  }

  private groupOf(task: SchedTask): ShareGroup {
    return task.share ?? this.defaultGroup;
  }

  private laneOf(g: ShareGroup): Lane {
    let lane = this.lanes.get(g);
    if (lane === undefined) this.lanes.set(g, (lane = this.newLane()));
    return lane;
  }

  /** Before a group's first task (waiting or running): it joins at the virtual time less its credit. */
  private activate(g: ShareGroup): void {
    if (g.pending + g.running > 0) return;
    let least = Infinity;
    for (const o of this.active) if (o.pass < least) least = o.pass;
    if (least !== Infinity && least > this.vt) this.vt = least;
    const earliest = this.vt - FAIR_CREDIT_US / g.weight;
    if (g.pass < earliest) g.pass = earliest;
    this.active.push(g);
  }

  private deactivateIfIdle(g: ShareGroup): void {
    if (g.pending + g.running > 0) return;
    const i = this.active.indexOf(g);
    if (i >= 0) this.active.splice(i, 1);
  }

  push(task: SchedTask): void {
    const g = this.groupOf(task);
    const c = this.charged.get(task);
    if (c !== undefined) this.uncharge(task, g, c); // handed back by the executor (waiting for memory)
    this.activate(g);
    g.pending++;
    this.laneOf(g).push(task);
  }

  pop(worker: WorkerSlot): SchedTask | undefined {
    const wi = worker.index;
    if (worker.inflight > 0 && this.inflightUs[wi]! >= FAIR_INFLIGHT_US) return undefined;
    let best: ShareGroup | null = null;
    let bestTask: SchedTask | undefined;
    let least = Infinity;
    for (const g of this.active) {
      if (g.pass < least) least = g.pass;
      if (g.pending === 0) continue;
      const head = this.lanes.get(g)!.bestFor(wi)?.peek();
      if (head === undefined) continue;
      if (
        best === null ||
        g.pass < best.pass ||
        (g.pass === best.pass &&
          (g.running < best.running || (g.running === best.running && head.seq < bestTask!.seq)))
      ) {
        best = g;
        bestTask = head;
      }
    }
    if (least !== Infinity && least > this.vt) this.vt = least;
    if (best === null) return undefined;
    const t = this.lanes.get(best)!.pop(wi)!;
    best.pending--;
    this.charge(t, best, worker);
    return t;
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

  /** A task that followed its predecessor into `worker`'s queue (chain forwarding) runs there now. */
  forwarded(task: SchedTask, worker: WorkerSlot): void {
    const g = this.groupOf(task);
    this.activate(g);
    this.charge(task, g, worker);
  }

  completed(task: SchedTask, worker: WorkerSlot, durationUs: number): void {
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

  private uncharge(task: SchedTask, g: ShareGroup, c: Charge): void {
    this.release(task, g, c);
    this.deactivateIfIdle(g);
  }
}
