/**
 * Central-queue policies (eager, prio): ready tasks wait in one queue per eligibility set (the set of
 * workers that can run them), so a worker never scans past tasks it cannot run. A worker pops the
 * best head among the queues it belongs to.
 */
import type { PolicyContext, SchedTask, SchedulerPolicy, WorkerSlot } from './policy.js';

interface Bucket {
  push(t: SchedTask): void;
  peek(): SchedTask | undefined;
  pop(): SchedTask | undefined;
  readonly length: number;
}

export abstract class CentralPolicy implements SchedulerPolicy {
  abstract readonly name: string;
  readonly forwardChains = true;
  private readonly buckets = new Map<readonly number[], Bucket>();
  private readonly byKey = new Map<string, Bucket>();
  private bucketsOfWorker: Bucket[][] = [];
  private count = 0;

  protected abstract newBucket(): Bucket;
  /** True when a must run before b. */
  protected abstract before(a: SchedTask, b: SchedTask): boolean;

  attach(ctx: PolicyContext): void {
    this.bucketsOfWorker = ctx.workers.map(() => []);
  }

  private bucketFor(eligible: readonly number[]): Bucket {
    let b = this.buckets.get(eligible);
    if (b) return b;
    const key = eligible.join(',');
    b = this.byKey.get(key);
    if (!b) {
      b = this.newBucket();
      this.byKey.set(key, b);
      for (const w of eligible) this.bucketsOfWorker[w]?.push(b);
    }
    this.buckets.set(eligible, b);
    return b;
  }

  push(task: SchedTask): void {
    this.bucketFor(task.eligible).push(task);
    this.count++;
  }

  pop(worker: WorkerSlot): SchedTask | undefined {
    const mine = this.bucketsOfWorker[worker.index];
    if (!mine) return undefined;
    let best: Bucket | null = null;
    let bestTask: SchedTask | undefined;
    for (const b of mine) {
      const t = b.peek();
      if (t && (!bestTask || this.before(t, bestTask))) {
        best = b;
        bestTask = t;
      }
    }
    if (!best) return undefined;
    this.count--;
    return best.pop();
  }

  pending(): number {
    return this.count;
  }
}
