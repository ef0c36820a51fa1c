/**
 * The job store as the scaled-out service uses it: async (PostgreSQL is remote), with the attempt log
 * that makes recovery visible. Two implementations: `PgJobStore` (pg-store.ts) for many machines and
 * `SqliteScaleStore` (sqlite-scale-store.ts) over the embedded service's SQLite database for one.
 *
 * Exactly-once: `startAttempt` moves a job to running with attempt + 1 (also from running, when an
 * earlier attempt's agent died), and `finish` only lands for the current attempt while the job is
 * running. So whichever delivery of a job a queue makes, one outcome is committed; a delivery that
 * finds the job final does nothing; a re-run after a stall is recorded as a duplicate execution.
 */
import type { FinishOutcome, InsertOutcome, JobRecord, JobState, ListQuery, NewJob } from './job-store.js';

export interface AttemptStart {
  readonly job: JobRecord;
  /** True when an earlier attempt had started and never finished (its agent died or stalled). */
  readonly rerun: boolean;
}

export interface AttemptRow {
  readonly jobId: string;
  readonly attempt: number;
  readonly agent: string;
  readonly startedAt: number;
  readonly finishedAt: number | null;
  /**
   * 'succeeded' | 'failed' | 'cancelled' when this attempt committed; 'superseded' when it finished after
   * a later attempt had started; 'lost' when it never finished (its agent died) and a later one committed.
   */
  readonly outcome: string | null;
  /** What the attempt's agent recorded (agent, spans in epoch µs), once it finished. */
  readonly trace?: unknown;
}

export interface StoreStats {
  readonly counts: Record<JobState, number>;
  /** Attempts started while an earlier attempt of the same job was in flight. */
  readonly duplicateExecutions: number;
  /** Jobs held because no agent can fit them. */
  readonly held: number;
}

export interface JobStoreApi {
  insertMany(jobs: readonly NewJob[], now?: number): Promise<InsertOutcome[]>;
  get(id: string): Promise<JobRecord | null>;
  list(q: ListQuery): Promise<JobRecord[]>;
  /** How many jobs match the filters of a list, counted up to `cap` (`exact` false: at least `cap`). */
  count(q: Omit<ListQuery, 'limit' | 'beforeSeq'>, cap?: number): Promise<{ total: number; exact: boolean }>;
  startAttempt(id: string, agent: string, now?: number): Promise<AttemptStart | null>;
  /** startAttempt for many jobs at once (one round trip); jobs not started are absent from the map. */
  startAttempts(ids: readonly string[], agent: string, now?: number): Promise<Map<string, AttemptStart>>;
  /** finish for many attempts at once; returns the ids whose outcome was committed. */
  finishMany(
    items: readonly { id: string; attempt: number; o: ScaleFinish }[],
    now?: number,
  ): Promise<Set<string>>;
  setProgress(id: string, attempt: number, progress: number, message: string): Promise<boolean>;
  finish(id: string, attempt: number, o: ScaleFinish, now?: number): Promise<boolean>;
  /** Keeps a queued job queued with a reason shown in its message (no agent fits it yet). */
  hold(id: string, reason: string): Promise<boolean>;
  cancelQueued(id: string, now?: number): Promise<boolean>;
  /** Marks a running job to be cancelled; its agent sees it and aborts it (false unless running). */
  requestCancel(id: string): Promise<boolean>;
  /** The ids among these that are running with a cancel requested (one round trip for an agent). */
  cancelRequested(ids: readonly string[]): Promise<Set<string>>;
  attempts(id: string): Promise<AttemptRow[]>;
  /** Running jobs whose deadline is before `before` (epoch ms), oldest deadline first. */
  overdue(before: number, limit: number): Promise<JobRecord[]>;
  stats(): Promise<StoreStats>;
  close(): Promise<void>;
}

/** A finish that may carry the attempt's trace (kept in the attempt log, not in a file). */
export type ScaleFinish = FinishOutcome & { readonly trace?: unknown };

export const HELD_PREFIX = 'held: ';
