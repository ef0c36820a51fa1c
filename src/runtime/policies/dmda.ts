/**
 * dmda / dmdas (after StarPU): each ready task goes at once to the worker where it is expected to
 * finish first, counting the work already queued there, the time to bring its missing inputs
 * (bus model) and its expected run time (performance models):
 *
 *   finish(w) = max(queueEnd(w), now + transfer(task, w)) + run(task, w)
 *
 * Transfers overlap the queue wait because the inputs are prefetched as soon as the task is placed.
 * dmda keeps each worker's queue in placement order; dmdas orders it by priority (critical path
 * first), which is what keeps the GPUs fed at the end of a tiled factorization.
 *
 * A worker whose model for the task is still unknown is priced at the best known estimate (or 1 µs),
 * so uncalibrated devices get tried and learned instead of being ignored or flooded.
 *
 * Share groups (rt.submit's `share`): placement is unchanged, but once a task names a group each
 * worker's queue is split by group and the worker takes its next task from the group most behind in
 * device time per weight (share-ledger.ts, share-queues.ts), so a low-weight tenant's flood placed on a
 * device cannot starve another tenant's tasks placed there. The expected finish a placement computes
 * still counts the whole queue, so a task of a group that is behind may be placed as if it waited
 * behind work it will in fact pass (it then starts earlier than expected, never later).
 */
import type { PolicyContext, SchedTask, SchedulerPolicy, WorkerSlot } from './policy.js';
import { higherPriorityFirst } from './prio.js';
import { Fifo, Heap } from './queues.js';
import { ShareLedger } from './share-ledger.js';
import { ShareSplitQueue, type WorkerQueue } from './share-queues.js';

class FifoQueue implements WorkerQueue {
  private readonly q = new Fifo<SchedTask>();
  push(t: SchedTask): void {
    this.q.push(t);
  }
  pop(): SchedTask | undefined {
    return this.q.shift();
  }
  get length(): number {
    return this.q.length;
  }
}

export interface DmdaOptions {
  /** Priority-ordered worker queues (dmdas). */
  readonly sorted: boolean;
  /** Weight of the transfer term (StarPU's beta; 1 = as predicted). */
  readonly beta?: number;
  /**
   * A worker takes more work while it holds fewer than `lookahead` launches (1 running + 1 staged
   * hides launch latency) or less than `lookaheadUs` of expected work (tiny tasks need a deeper
   * queue to amortize messaging). Beyond that, tasks wait in the policy, where priorities still act.
   */
  readonly lookahead?: number;
  readonly lookaheadUs?: number;
  /**
   * Record the per-candidate expectations on each task (shown in traces): 'observed' (default) only
   * while an observer listens, as formatting costs more than the decision itself.
   */
  readonly explain?: boolean | 'observed';
}

export class DmdaPolicy implements SchedulerPolicy {
  readonly name: string;
  readonly forwardChains = false;
  private ctx!: PolicyContext;
  private queues: WorkerQueue[] = [];
  /** Expected time (runtime clock, µs) at which each worker is done with what it was given. */
  private expEnd: number[] = [];
  /** Sum of the expected lengths placed on each worker and not finished. */
  private remaining: number[] = [];
  private readonly placed = new Map<SchedTask, number>();
  /** Worker each popped, unfinished task was handed to. */
  private readonly poppedFor = new Map<SchedTask, number>();
  private count = 0;
  private readonly beta: number;
  private readonly lookahead: number;
  private readonly lookaheadUs: number;
  /** Expected work (µs) already handed to each worker's device queue. */
  private inflightUs: number[] = [];
  private readonly explain: boolean | 'observed';
  /** Set by the first task that names a share group; null until then (no cost without groups). */
  private ledger: ShareLedger | null = null;
  /** Scratch per candidate (no allocation per decision). */
  private run = new Float64Array(8);
  private xfer = new Float64Array(8);

  constructor(private readonly opts: DmdaOptions) {
    this.name = opts.sorted ? 'dmdas' : 'dmda';
    this.beta = opts.beta ?? 1;
    this.lookahead = opts.lookahead ?? 2;
    this.lookaheadUs = opts.lookaheadUs ?? 1000;
    this.explain = opts.explain ?? 'observed';
  }

  private newQueue(): WorkerQueue {
    return this.opts.sorted ? new Heap<SchedTask>(higherPriorityFirst) : new FifoQueue();
  }

  attach(ctx: PolicyContext): void {
    this.ctx = ctx;
    this.queues = ctx.workers.map(() => this.newQueue());
    this.expEnd = ctx.workers.map(() => 0);
    this.remaining = ctx.workers.map(() => 0);
    this.inflightUs = ctx.workers.map(() => 0);
  }

  push(task: SchedTask): void {
    const ctx = this.ctx;
    const again = this.placed.get(task);
    if (again !== undefined) this.forget(task, again); // handed back (it waited for memory)
    if (this.ledger === null && task.share) {
      const ledger = (this.ledger = new ShareLedger(ctx, this.count));
      this.queues = this.queues.map((q) => new ShareSplitQueue(ledger, () => this.newQueue(), q));
    }
    this.ledger?.queued(task);
    const now = ctx.now();
    const el = task.eligible;
    const n = el.length;
    if (this.run.length < n) {
      this.run = new Float64Array(n);
      this.xfer = new Float64Array(n);
    }
    const run = this.run;
    const xfer = this.xfer;
    // Known estimates first: an unknown one is priced at the best known.
    let bestKnown = Infinity;
    for (let i = 0; i < n; i++) {
      const e = ctx.expectedUs(task, ctx.workers[el[i]!]!);
      run[i] = e;
      if (e < bestKnown) bestKnown = e;
    }
    const fallback = bestKnown < Infinity ? Math.max(bestKnown, 1) : 1;
    let best = 0;
    let bestFin = Infinity;
    let bestStart = 0;
    for (let i = 0; i < n; i++) {
      const w = ctx.workers[el[i]!]!;
      if (Number.isNaN(run[i]!)) run[i] = fallback;
      const x = (xfer[i] = this.beta * ctx.transferUs(task, w));
      const end = this.expEnd[w.index]!;
      const start = end > now ? end : now;
      const ready = now + x > start ? now + x : start;
      const fin = ready + run[i]!;
      if (fin < bestFin) {
        bestFin = fin;
        best = i;
        bestStart = start;
      }
    }
    const w = ctx.workers[el[best]!]!;
    if (this.explain === true || (this.explain && ctx.observed()))
      task.placement = this.describe(task, w, now);
    const added = bestFin - bestStart;
    this.expEnd[w.index] = bestFin;
    this.remaining[w.index]! += added;
    this.placed.set(task, added);
    this.queues[w.index]!.push(task);
    this.count++;
    ctx.prefetch(task, w);
  }

  /** "dmdas -> gpu0 | cpu0.w0 wait+xfer+run=finish | ..." in µs, before the queue grows. */
  private describe(task: SchedTask, chosen: WorkerSlot, now: number): string {
    const el = task.eligible;
    let s = `${this.name} -> ${chosen.queue.id} (us wait+xfer+run)`;
    const shown = el.length < 8 ? el.length : 8;
    for (let i = 0; i < shown; i++) {
      const w = this.ctx.workers[el[i]!]!;
      const e = this.expEnd[w.index]!;
      const wait = e > now ? e - now : 0;
      s += ` | ${w.queue.id} ${Math.round(wait)}+${Math.round(this.xfer[i]!)}+${Math.round(this.run[i]!)}`;
    }
    return el.length > shown ? `${s} | +${el.length - shown} more` : s;
  }

  pop(worker: WorkerSlot): SchedTask | undefined {
    const i = worker.index;
    if (worker.inflight >= this.lookahead && this.inflightUs[i]! >= this.lookaheadUs) return undefined;
    this.ledger?.advanceClock();
    const t = this.queues[i]?.pop();
    if (t) {
      this.ledger?.taken(t, worker);
      this.count--;
      this.inflightUs[i]! += this.placed.get(t) ?? 0;
      this.poppedFor.set(t, i);
    }
    return t;
  }

  pending(): number {
    return this.count;
  }

  /** Drops a placed task's share from its worker's expectations (it was handed back by the executor). */
  private forget(task: SchedTask, added: number): void {
    this.placed.delete(task);
    const w = this.poppedFor.get(task);
    if (w === undefined) return;
    this.poppedFor.delete(task);
    this.inflightUs[w] = Math.max(0, this.inflightUs[w]! - added);
    this.remaining[w] = Math.max(0, this.remaining[w]! - added);
  }

  onComplete(task: SchedTask, worker: WorkerSlot, durationUs: number): void {
    this.ledger?.completed(task, durationUs);
    const added = this.placed.get(task);
    if (added === undefined) return;
    this.placed.delete(task);
    this.poppedFor.delete(task);
    const i = worker.index;
    this.inflightUs[i] = Math.max(0, this.inflightUs[i]! - added);
    const rem = Math.max(0, this.remaining[i]! - added);
    this.remaining[i] = rem;
    // Re-anchor on the clock: what is left is the predicted length of the unfinished work.
    this.expEnd[i] = this.ctx.now() + rem;
  }
}
