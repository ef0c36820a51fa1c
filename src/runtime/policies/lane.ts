/**
 * A lane: the ready tasks of one share group in a central-queue policy (central.ts), one bucket per
 * eligibility set and each worker's buckets. Its own module so fair-share.ts and central.ts both use it
 * without importing each other.
 */
import type { SchedTask } from './policy.js';

export interface Bucket {
  push(t: SchedTask): void;
  peek(): SchedTask | undefined;
  pop(): SchedTask | undefined;
  readonly length: number;
}

/** The ready tasks of one share group: a bucket per eligibility set, and each worker's buckets. */
export class Lane {
  private readonly buckets = new Map<readonly number[], Bucket>();
  private readonly byKey = new Map<string, Bucket>();
  private readonly bucketsOfWorker: Bucket[][];
  count = 0;

  constructor(
    workers: number,
    private readonly newBucket: () => Bucket,
    private readonly before: (a: SchedTask, b: SchedTask) => boolean,
  ) {
    this.bucketsOfWorker = Array.from({ length: workers }, () => []);
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

  /** The bucket holding the task `worker` would take next, or null. */
  bestFor(worker: number): Bucket | null {
    const mine = this.bucketsOfWorker[worker];
    if (!mine) return null;
    let best: Bucket | null = null;
    let bestTask: SchedTask | undefined;
    for (const b of mine) {
      const t = b.peek();
      if (t && (!bestTask || this.before(t, bestTask))) {
        best = b;
        bestTask = t;
      }
    }
    return best;
  }

  pop(worker: number): SchedTask | undefined {
    const best = this.bestFor(worker);
    if (!best) return undefined;
    this.count--;
    return best.pop();
  }
}
