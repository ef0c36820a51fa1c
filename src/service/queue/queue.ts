/**
 * The job queue as the scaled-out service sees it: one small interface, two implementations that pass
 * the same conformance suite (test/scale/queue-conformance.test.ts):
 *   - `EmbeddedQueue`: SQLite in the data directory; one machine, any number of processes on it.
 *   - `BullQueue`: BullMQ on Redis; many machines.
 * The queue only carries work. The job store (SQLite or PostgreSQL) stays the truth about a job's state
 * and result: a queue may deliver a job twice (stalled-job recovery is at-least-once everywhere), and the
 * store's attempt-fenced commit is what makes the result land exactly once.
 */

/** Tandem priorities run from -100 to 100, higher first (the HTTP API's range). */
export const MIN_PRIORITY = -100;
export const MAX_PRIORITY = 100;

export interface QueueJobSpec {
  /** The Tandem job id; adding an id that is still in the queue is a no-op. */
  readonly id: string;
  /** The lane: agents consume the device classes they have ('cpu', 'gpu', ...). */
  readonly deviceClass: string;
  readonly priority: number;
  /** Device memory the job needs at once; an agent whose devices cannot hold it declines it. */
  readonly memBytes: number;
  readonly data: Readonly<Record<string, unknown>>;
  /** Deliveries after failures (not stalls) before the job fails for good; default 3. */
  readonly attempts?: number;
  /** Exponential backoff base between failed attempts; default 500 ms. */
  readonly backoffMs?: number;
}

export interface QueueJob {
  readonly id: string;
  readonly deviceClass: string;
  readonly priority: number;
  readonly memBytes: number;
  readonly data: Readonly<Record<string, unknown>>;
  /** Failed deliveries so far (0 on the first run). */
  readonly attemptsMade: number;
  progress(fraction: number, message?: string): Promise<void>;
}

/** Throws this (or any error) from a handler to fail the delivery; `retry: false` fails it for good. */
export class JobFailure extends Error {
  constructor(
    message: string,
    readonly retry: boolean,
  ) {
    super(message);
    this.name = 'JobFailure';
  }
}

export interface ConsumeOptions {
  readonly deviceClasses: readonly string[];
  /** Jobs run at once by this consumer (per device class). */
  readonly concurrency: number;
  /** Whether this consumer can hold the job now; a declined job goes back for another consumer. */
  readonly fits?: (job: Pick<QueueJob, 'id' | 'deviceClass' | 'memBytes'>) => boolean;
  /** At most `max` jobs started per `durationMs`, across all consumers of a device class. */
  readonly rateLimit?: { readonly max: number; readonly durationMs: number };
  /** Runs a job; the signal aborts when the consumer closes. The resolved value is the result. */
  readonly handler: (job: QueueJob, signal: AbortSignal) => Promise<unknown>;
}

export interface Consumer {
  readonly id: string;
  /** Stops taking jobs, waits for running ones (aborted after `graceMs`), releases locks. */
  close(graceMs?: number): Promise<void>;
}

export type QueueEvent =
  | { readonly type: 'completed'; readonly id: string; readonly result: unknown }
  | {
      readonly type: 'failed';
      readonly id: string;
      readonly error: string;
      readonly attemptsMade: number;
      /** false while retries are left (the job is waiting out its backoff). */
      readonly final: boolean;
    }
  | { readonly type: 'stalled'; readonly id: string }
  | { readonly type: 'progress'; readonly id: string; readonly progress: number; readonly message: string };

export interface QueueCounts {
  /** Ready to run (all priorities). */
  waiting: number;
  active: number;
  /** Waiting out a retry backoff or a decline. */
  delayed: number;
  completed: number;
  failed: number;
}

export interface QueueTuning {
  /** A running job's lock lasts this long unless its consumer renews it (at half the period). */
  readonly lockMs: number;
  /** How often consumers look for jobs whose lock has lapsed (their consumer died). */
  readonly stalledCheckMs: number;
  /** Stalls a job survives before it fails; each stall re-runs it. */
  readonly maxStalls: number;
}

/** Tuned so that a job whose agent was killed is back in the queue within ~4 s (issue 8: ≤ 5 s). */
export const DEFAULT_TUNING: QueueTuning = { lockMs: 2000, stalledCheckMs: 1000, maxStalls: 5 };

export interface JobQueue {
  readonly kind: 'embedded' | 'bullmq';
  /** Durable once resolved: the jobs survive the adder's death. */
  add(jobs: readonly QueueJobSpec[]): Promise<void>;
  consume(opts: ConsumeOptions): Consumer;
  /** Counts per device class (all classes seen when none is given). */
  counts(deviceClasses?: readonly string[]): Promise<Record<string, QueueCounts>>;
  /** Removes a job that has not started; false when it is running or gone. */
  cancel(id: string, deviceClass: string): Promise<boolean>;
  on(listener: (e: QueueEvent) => void): () => void;
  close(): Promise<void>;
}

export function emptyCounts(): QueueCounts {
  return { waiting: 0, active: 0, delayed: 0, completed: 0, failed: 0 };
}

export function clampPriority(p: number): number {
  return Math.min(MAX_PRIORITY, Math.max(MIN_PRIORITY, Math.round(Number.isFinite(p) ? p : 0)));
}

/** A URL safe to print: the password replaced. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url.replace(/:[^:@/]*@/, ':***@');
  }
}

export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
