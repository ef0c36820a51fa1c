/**
 * ws: work stealing. A task released by a completion goes to the deque of the worker that completed
 * its predecessor (its data is likely there), otherwise to the eligible worker with the shortest
 * deque. Owners take the newest task (locality), idle workers steal the oldest one they can run from
 * the longest deque. Needs no model: the baseline StarPU users fall back to (lws).
 */
import type { PolicyContext, SchedTask, SchedulerPolicy, WorkerSlot } from './policy.js';

/** How many tasks a thief scans from the victim's old end for one it may run. */
const STEAL_SCAN = 16;

export class WorkStealingPolicy implements SchedulerPolicy {
  readonly name = 'ws';
  readonly forwardChains = true;
  private ctx!: PolicyContext;
  private deques: SchedTask[][] = [];
  private count = 0;
  /** The worker whose completion is releasing successors right now (set by onComplete). */
  private releasing: WorkerSlot | null = null;

  constructor(private readonly lookahead = 2) {}

  attach(ctx: PolicyContext): void {
    this.ctx = ctx;
    this.deques = ctx.workers.map(() => []);
  }

  push(task: SchedTask): void {
    const el = task.eligible;
    let target = -1;
    const r = this.releasing;
    if (r && el.includes(r.index)) target = r.index;
    else {
      let shortest = Infinity;
      for (const i of el) {
        const len = this.deques[i]!.length + this.ctx.workers[i]!.inflight;
        if (len < shortest) {
          shortest = len;
          target = i;
        }
      }
    }
    this.deques[target]!.push(task);
    this.count++;
  }

  pop(worker: WorkerSlot): SchedTask | undefined {
    if (worker.inflight >= this.lookahead) return undefined;
    const own = this.deques[worker.index];
    if (!own) return undefined;
    let t = own.pop();
    if (!t) t = this.steal(worker);
    if (t) this.count--;
    return t;
  }

  private steal(thief: WorkerSlot): SchedTask | undefined {
    let victim: SchedTask[] | null = null;
    for (let i = 0; i < this.deques.length; i++) {
      const d = this.deques[i]!;
      if (i !== thief.index && d.length > 0 && (!victim || d.length > victim.length)) victim = d;
    }
    if (!victim) return undefined;
    const scan = Math.min(victim.length, STEAL_SCAN);
    for (let j = 0; j < scan; j++) {
      if (victim[j]!.eligible.includes(thief.index)) return victim.splice(j, 1)[0];
    }
    // The longest deque had nothing for this thief: try the others from their old end.
    for (const d of this.deques) {
      if (d === victim) continue;
      const k = d.findIndex((t) => t.eligible.includes(thief.index));
      if (k >= 0) return d.splice(k, 1)[0];
    }
    return undefined;
  }

  pending(): number {
    return this.count;
  }

  onComplete(_task: SchedTask, worker: WorkerSlot): void {
    // The executor makes successors ready right after this call: they land on this worker.
    this.releasing = worker;
    queueMicrotask(() => {
      if (this.releasing === worker) this.releasing = null;
    });
  }
}
