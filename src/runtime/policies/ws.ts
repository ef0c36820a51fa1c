/**
 * ws: work stealing. A task released by a completion goes to the deque of the worker that completed
 * its predecessor (its data is likely there), otherwise to the eligible worker with the shortest
 * deque. Owners take the newest task (locality), idle workers steal the oldest one they can run from
 * the longest deque. Needs no model: the baseline StarPU users fall back to (lws).
 *
 * Share groups (rt.submit's `share`): once a task names a group, each deque is split by group and a
 * worker takes its next task from the group most behind in device time per weight (share-ledger.ts):
 * its own newest task of that group if it has one (locality kept within the group), else that group's
 * oldest it can run from the longest other deque; a worker's device queue holds at most the ledger's
 * bound of expected work, and chains follow their predecessors only within it. So a low-weight tenant's
 * flood spread over the deques cannot starve another tenant's tasks.
 */
import type { ShareGroup } from '../shares.js';
import type { PolicyContext, SchedTask, SchedulerPolicy, WorkerSlot } from './policy.js';
import { ShareLedger } from './share-ledger.js';

/** How many tasks a thief scans from the victim's old end for one it may run. */
const STEAL_SCAN = 16;

/** Takes from `victims` (the longest first) the oldest task `thief` may run, and the deque's index. */
function stealFrom(victims: readonly SchedTask[][], thief: number): [SchedTask, number] | undefined {
  let v = -1;
  for (let i = 0; i < victims.length; i++)
    if (victims[i]!.length > 0 && (v < 0 || victims[i]!.length > victims[v]!.length)) v = i;
  if (v < 0) return undefined;
  const victim = victims[v]!;
  const scan = Math.min(victim.length, STEAL_SCAN);
  for (let j = 0; j < scan; j++) {
    if (victim[j]!.eligible.includes(thief)) return [victim.splice(j, 1)[0]!, v];
  }
  // The longest deque had nothing for this thief: try the others from their old end.
  for (let i = 0; i < victims.length; i++) {
    if (i === v) continue;
    const k = victims[i]!.findIndex((t) => t.eligible.includes(thief));
    if (k >= 0) return [victims[i]!.splice(k, 1)[0]!, i];
  }
  return undefined;
}

export class WorkStealingPolicy implements SchedulerPolicy {
  readonly name = 'ws';
  readonly forwardChains = true;
  private ctx!: PolicyContext;
  private deques: SchedTask[][] = [];
  /** With share groups: each worker's deque by group, and its length over all groups. */
  private split: Map<ShareGroup, SchedTask[]>[] = [];
  private lengths: number[] = [];
  private ledger: ShareLedger | null = null;
  private count = 0;
  /** The worker whose completion is releasing successors right now (set by onComplete). */
  private releasing: WorkerSlot | null = null;
  /** Chains follow their predecessors only within the ledger's bound once groups exist. */
  admitForward: ((task: SchedTask, worker: WorkerSlot) => boolean) | undefined = undefined;

  constructor(private readonly lookahead = 2) {}

  attach(ctx: PolicyContext): void {
    this.ctx = ctx;
    this.deques = ctx.workers.map(() => []);
  }

  private beginSharing(): ShareLedger {
    const ledger = (this.ledger = new ShareLedger(this.ctx, this.count));
    this.split = this.deques.map((d) => new Map([[ledger.defaultGroup, d]]));
    this.lengths = this.deques.map((d) => d.length);
    this.admitForward = (t, w) => ledger.admitForward(t, w);
    return ledger;
  }

  private dequeLength(i: number): number {
    return this.ledger === null ? this.deques[i]!.length : this.lengths[i]!;
  }

  push(task: SchedTask): void {
    const el = task.eligible;
    let target = -1;
    const r = this.releasing;
    if (r && el.includes(r.index)) target = r.index;
    else {
      let shortest = Infinity;
      for (const i of el) {
        const len = this.dequeLength(i) + this.ctx.workers[i]!.inflight;
        if (len < shortest) {
          shortest = len;
          target = i;
        }
      }
    }
    this.count++;
    const ledger = this.ledger ?? (task.share ? this.beginSharing() : null);
    if (ledger === null) {
      this.deques[target]!.push(task);
      return;
    }
    const g = ledger.queued(task);
    const mine = this.split[target]!;
    let d = mine.get(g);
    if (d === undefined) mine.set(g, (d = []));
    d.push(task);
    this.lengths[target]!++;
  }

  pop(worker: WorkerSlot): SchedTask | undefined {
    if (worker.inflight >= this.lookahead) return undefined;
    const t = this.ledger === null ? this.popUnshared(worker) : this.popShared(worker, this.ledger);
    if (t) this.count--;
    return t;
  }

  private popUnshared(worker: WorkerSlot): SchedTask | undefined {
    const own = this.deques[worker.index];
    if (!own) return undefined;
    const t = own.pop();
    if (t) return t;
    // A thief's own deque is empty, so it can stay in the list (the longest is never it).
    return stealFrom(this.deques, worker.index)?.[0];
  }

  private popShared(worker: WorkerSlot, ledger: ShareLedger): SchedTask | undefined {
    if (ledger.full(worker)) return undefined;
    ledger.advanceClock();
    const groups = ledger.active.filter((g) => g.pending > 0);
    groups.sort((a, b) => (ledger.before(a, b) ? -1 : ledger.before(b, a) ? 1 : 0));
    const wi = worker.index;
    const empty: SchedTask[] = [];
    for (const g of groups) {
      let t = this.split[wi]!.get(g)?.pop();
      let from = wi;
      if (!t) {
        const stolen = stealFrom(
          this.split.map((m) => m.get(g) ?? empty),
          wi,
        );
        if (stolen) [t, from] = stolen;
      }
      if (t) {
        this.lengths[from]!--;
        ledger.taken(t, worker);
        return t;
      }
    }
    return undefined;
  }

  pending(): number {
    return this.count;
  }

  onForward(task: SchedTask, worker: WorkerSlot): void {
    this.ledger?.forwarded(task, worker);
  }

  onComplete(task: SchedTask, worker: WorkerSlot, durationUs: number): void {
    this.ledger?.completed(task, durationUs);
    // The executor makes successors ready right after this call: they land on this worker.
    this.releasing = worker;
    queueMicrotask(() => {
      if (this.releasing === worker) this.releasing = null;
    });
  }
}
