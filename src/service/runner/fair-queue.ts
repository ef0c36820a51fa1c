/**
 * The in-memory view of queued jobs, ordered for dispatch: weighted fair sharing between tenants
 * (stride scheduling: each dispatch advances the tenant's pass by 1/weight, the lowest pass goes next),
 * and within a tenant the highest priority first, then submission order. SQLite stays the truth; this
 * is rebuilt from it at start.
 */
import { Heap } from '../../core/queues.js';
import type { JobRecord } from '../store/job-store.js';

export interface QueuedJob {
  readonly id: string;
  readonly seq: number;
  readonly tenantId: string;
  readonly priority: number;
  readonly memBytes: number;
  /** The record as inserted, when this process queued it (the dispatcher then reads nothing back). */
  readonly record?: JobRecord;
}

const byPriorityThenAge = (a: QueuedJob, b: QueuedJob): boolean =>
  a.priority !== b.priority ? a.priority > b.priority : a.seq < b.seq;

interface TenantLane {
  readonly heap: Heap<QueuedJob>;
  pass: number;
  live: number;
}

export class FairQueue {
  private readonly lanes = new Map<string, TenantLane>();
  /** Ids still queued (a cancel removes the id; the heap entry is skipped lazily). */
  private readonly queued = new Map<string, QueuedJob>();
  /** Queued counts by tenant and priority, for metrics. */
  private readonly depth = new Map<string, Map<number, number>>();

  constructor(private readonly weightOf: (tenantId: string) => number) {}

  get size(): number {
    return this.queued.size;
  }

  has(id: string): boolean {
    return this.queued.has(id);
  }

  countForTenant(tenantId: string): number {
    return this.lanes.get(tenantId)?.live ?? 0;
  }

  depthByTenantAndPriority(): ReadonlyMap<string, ReadonlyMap<number, number>> {
    return this.depth;
  }

  private bump(j: QueuedJob, d: number): void {
    let m = this.depth.get(j.tenantId);
    if (!m) this.depth.set(j.tenantId, (m = new Map()));
    const n = (m.get(j.priority) ?? 0) + d;
    if (n === 0) m.delete(j.priority);
    else m.set(j.priority, n);
  }

  push(j: QueuedJob): void {
    if (this.queued.has(j.id)) return;
    let lane = this.lanes.get(j.tenantId);
    if (!lane) {
      lane = { heap: new Heap(byPriorityThenAge), pass: 0, live: 0 };
      this.lanes.set(j.tenantId, lane);
    }
    // A tenant that was idle re-enters at the current minimum pass: idling banks no credit.
    if (lane.live === 0) lane.pass = Math.max(lane.pass, this.minActivePass());
    lane.heap.push(j);
    lane.live++;
    this.queued.set(j.id, j);
    this.bump(j, 1);
  }

  remove(id: string): QueuedJob | null {
    const j = this.queued.get(id);
    if (!j) return null;
    this.queued.delete(id);
    this.lanes.get(j.tenantId)!.live--;
    this.bump(j, -1);
    return j;
  }

  private minActivePass(): number {
    let min = Infinity;
    for (const l of this.lanes.values()) if (l.live > 0 && l.pass < min) min = l.pass;
    return min === Infinity ? 0 : min;
  }

  private head(lane: TenantLane): QueuedJob | undefined {
    for (;;) {
      const top = lane.heap.peek();
      if (!top || this.queued.has(top.id)) return top;
      lane.heap.pop();
    }
  }

  /**
   * The next job to run: the head of the lane with the lowest pass among tenants that `eligible`
   * admits. The job is removed and its tenant's pass advanced. null when nothing is eligible.
   */
  next(eligible: (j: QueuedJob) => boolean): QueuedJob | null {
    let best: { lane: TenantLane; job: QueuedJob } | null = null;
    for (const lane of this.lanes.values()) {
      if (lane.live === 0) continue;
      const job = this.head(lane);
      if (!job || !eligible(job)) continue;
      if (!best || lane.pass < best.lane.pass || (lane.pass === best.lane.pass && job.seq < best.job.seq))
        best = { lane, job };
    }
    if (!best) return null;
    best.lane.heap.pop();
    this.remove(best.job.id);
    best.lane.pass += 1 / Math.max(1e-3, this.weightOf(best.job.tenantId));
    return best.job;
  }

  /** The job fairness would pick if quotas allowed everything (for memory reservation). */
  peekFair(): QueuedJob | null {
    let best: { pass: number; job: QueuedJob } | null = null;
    for (const lane of this.lanes.values()) {
      if (lane.live === 0) continue;
      const job = this.head(lane);
      if (job && (!best || lane.pass < best.pass)) best = { pass: lane.pass, job };
    }
    return best?.job ?? null;
  }
}
