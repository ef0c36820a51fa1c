/**
 * Callers waiting for particular jobs to finish (`POST /v1/jobs?wait=s`): one dispatcher listener for all
 * of them, waiters indexed by job id, so a finished job costs one map lookup however many wait.
 */
import type { JobRecord } from '../store/job-store.js';

export interface FinishedSource {
  onJobFinished(cb: (jobId: string, read: () => JobRecord | null) => void): () => void;
}

type Waiter = (job: JobRecord | null) => void;

export class JobWaiters {
  private readonly waiting = new Map<string, Set<Waiter>>();
  private readonly off: () => void;

  constructor(source: FinishedSource) {
    this.off = source.onJobFinished((jobId, read) => {
      const set = this.waiting.get(jobId);
      if (!set) return;
      this.waiting.delete(jobId);
      const job = read();
      for (const w of set) w(job);
    });
  }

  /** Resolves with the job once it finishes, or null after `ms` (register before the job can finish). */
  wait(jobId: string, ms: number): Promise<JobRecord | null> {
    return new Promise((resolve) => {
      let set = this.waiting.get(jobId);
      if (!set) this.waiting.set(jobId, (set = new Set()));
      const timer = setTimeout(() => done(null), ms);
      const done: Waiter = (job) => {
        clearTimeout(timer);
        const s = this.waiting.get(jobId);
        if (s) {
          s.delete(done);
          if (s.size === 0) this.waiting.delete(jobId);
        }
        resolve(job);
      };
      set.add(done);
    });
  }

  get size(): number {
    let n = 0;
    for (const s of this.waiting.values()) n += s.size;
    return n;
  }

  close(): void {
    this.off();
    for (const set of this.waiting.values()) for (const w of set) w(null);
    this.waiting.clear();
  }
}

export function isFinished(job: JobRecord): boolean {
  return job.state === 'succeeded' || job.state === 'failed' || job.state === 'cancelled';
}
