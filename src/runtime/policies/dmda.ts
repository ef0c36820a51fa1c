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
 */
import type { PolicyContext, SchedTask, SchedulerPolicy, WorkerSlot } from './policy.js';
import { higherPriorityFirst } from './prio.js';
import { Fifo, Heap } from './queues.js';

interface WorkerQueue {
  push(t: SchedTask): void;
  pop(): SchedTask | undefined;
  readonly length: number;
}

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
  /** Launches a worker may hold beyond the policy queue (1 running + 1 staged hides launch latency). */
  readonly lookahead?: number;
  /** Record the per-candidate expectations on each task (shown in traces). */
  readonly explain?: boolean;
}

function ms(us: number): string {
  return (us / 1000).toFixed(3);
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
  private count = 0;
  private readonly beta: number;
  private readonly lookahead: number;
  private readonly explain: boolean;

  constructor(private readonly opts: DmdaOptions) {
    this.name = opts.sorted ? 'dmdas' : 'dmda';
    this.beta = opts.beta ?? 1;
    this.lookahead = opts.lookahead ?? 2;
    this.explain = opts.explain ?? true;
  }

  attach(ctx: PolicyContext): void {
    this.ctx = ctx;
    this.queues = ctx.workers.map(() =>
      this.opts.sorted ? new Heap<SchedTask>(higherPriorityFirst) : new FifoQueue(),
    );
    this.expEnd = ctx.workers.map(() => 0);
    this.remaining = ctx.workers.map(() => 0);
  }

  push(task: SchedTask): void {
    const ctx = this.ctx;
    const now = ctx.now();
    const el = task.eligible;
    const n = el.length;
    // Known estimates first: an unknown one is priced at the best known.
    let bestKnown = Infinity;
    const run = new Array<number>(n);
    for (let i = 0; i < n; i++) {
      const e = ctx.expectedUs(task, ctx.workers[el[i]!]!);
      run[i] = e;
      if (e < bestKnown) bestKnown = e;
    }
    const fallback = Number.isFinite(bestKnown) ? Math.max(bestKnown, 1) : 1;
    let best = -1;
    let bestFin = Infinity;
    let bestStart = 0;
    const xfer = new Array<number>(n);
    for (let i = 0; i < n; i++) {
      const w = ctx.workers[el[i]!]!;
      const r = Number.isNaN(run[i]!) ? (run[i] = fallback) : run[i]!;
      const x = (xfer[i] = this.beta * ctx.transferUs(task, w));
      const start = this.expEnd[w.index]! > now ? this.expEnd[w.index]! : now;
      const ready = now + x > start ? now + x : start;
      const fin = ready + r;
      if (fin < bestFin) {
        bestFin = fin;
        best = i;
        bestStart = start;
      }
    }
    const w = ctx.workers[el[best]!]!;
    const added = bestFin - bestStart;
    this.expEnd[w.index] = bestFin;
    this.remaining[w.index]! += added;
    this.placed.set(task, added);
    if (this.explain) task.placement = this.describe(task, w, now, run, xfer);
    this.queues[w.index]!.push(task);
    this.count++;
    ctx.prefetch(task, w);
  }

  private describe(task: SchedTask, chosen: WorkerSlot, now: number, run: number[], xfer: number[]): string {
    const parts: string[] = [];
    const el = task.eligible;
    for (let i = 0; i < el.length && i < 8; i++) {
      const w = this.ctx.workers[el[i]!]!;
      const wait =
        (w === chosen ? this.expEnd[w.index]! - (run[i]! + Math.max(0, xfer[i]!)) : this.expEnd[w.index]!) -
        now;
      parts.push(`${w.queue.id} wait ${ms(Math.max(0, wait))} + xfer ${ms(xfer[i]!)} + run ${ms(run[i]!)}`);
    }
    return `${this.name} -> ${chosen.queue.id} (ms) | ${parts.join(' | ')}${el.length > 8 ? ` | +${el.length - 8} more` : ''}`;
  }

  pop(worker: WorkerSlot): SchedTask | undefined {
    if (worker.inflight >= this.lookahead) return undefined;
    const t = this.queues[worker.index]?.pop();
    if (t) this.count--;
    return t;
  }

  pending(): number {
    return this.count;
  }

  onComplete(task: SchedTask, worker: WorkerSlot): void {
    const added = this.placed.get(task);
    if (added === undefined) return;
    this.placed.delete(task);
    const i = worker.index;
    const rem = Math.max(0, this.remaining[i]! - added);
    this.remaining[i] = rem;
    // Re-anchor on the clock: what is left is the predicted length of the unfinished work.
    this.expEnd[i] = this.ctx.now() + rem;
  }
}
