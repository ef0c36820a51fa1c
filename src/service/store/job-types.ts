/** The job store's public types: a job's states, its record, what a submission and an outcome carry. */
import type { TandemError } from '../../core/errors.js';

export type JobState = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';
export const TERMINAL_STATES: readonly JobState[] = ['succeeded', 'failed', 'cancelled'];

export interface JobError {
  readonly code: string;
  readonly message: string;
  readonly details: Readonly<Record<string, unknown>>;
}

export interface JobRecord {
  readonly seq: number;
  readonly id: string;
  readonly tenantId: string;
  readonly type: string;
  readonly params: Readonly<Record<string, unknown>>;
  readonly priority: number;
  readonly jobClass: string;
  readonly memBytes: number;
  readonly state: JobState;
  readonly progress: number;
  readonly message: string;
  readonly attempt: number;
  readonly cancelRequested: boolean;
  readonly idempotencyKey: string | null;
  readonly device: string | null;
  readonly placement: string | null;
  readonly createdAt: number;
  readonly startedAt: number | null;
  readonly finishedAt: number | null;
  readonly error: JobError | null;
  /** Inline result (JSON) when small; large results live in `resultFile` under the data dir. */
  readonly result: unknown;
  readonly resultFile: string | null;
  readonly traceFile: string | null;
  /** The job's time budget as accepted at submit (null: a job from before deadlines; its type's default). */
  readonly timeoutMs?: number | null;
  /** Epoch ms past which the job is stopped: set at its first start, kept across re-queues. */
  readonly deadlineAt?: number | null;
}

export interface NewJob {
  readonly tenantId: string;
  readonly type: string;
  readonly params: Readonly<Record<string, unknown>>;
  readonly priority: number;
  readonly jobClass: string;
  readonly memBytes: number;
  readonly idempotencyKey: string | null;
  /** Time budget in ms (timeoutSeconds, or the type's default within the tenant's maximum). */
  readonly timeoutMs?: number;
}

/** Where a job inserted already running goes (`insertMany`'s claims). */
export interface InsertClaim {
  readonly device: string | null;
  readonly placement: string | null;
  /** Its deadline (epoch ms): it starts now, so its budget starts now. */
  readonly deadlineAt?: number | null;
}

export type InsertOutcome =
  { ok: true; job: JobRecord; created: boolean } | { ok: false; error: TandemError };

export interface FinishOutcome {
  readonly state: 'succeeded' | 'failed' | 'cancelled';
  readonly result?: unknown;
  readonly resultFile?: string | null;
  readonly error?: JobError | null;
  readonly traceFile?: string | null;
  /**
   * The device(s) the job's tasks ran on ("cpu0", "cpu0,cuda0"), null when none ran; replaces the
   * placement target the claim wrote. Absent: left as claimed.
   */
  readonly device?: string | null;
}

export interface ListQuery {
  readonly tenantId: string | null;
  readonly state?: JobState | undefined;
  /** A job type name. */
  readonly type?: string | undefined;
  readonly limit: number;
  /** Only jobs submitted before this sequence number (pagination, newest first). */
  readonly beforeSeq?: number | undefined;
}
