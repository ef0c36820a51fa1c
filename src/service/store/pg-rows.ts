/**
 * PostgreSQL's rows as the job store reads them, and the SQL helpers around them: a tandem_jobs row to a
 * JobRecord, a tandem_attempts row to an AttemptRow, and the WHERE clause of a listing. Kept apart from
 * pg-store.ts as job-rows.ts is from job-store.ts; the types differ from SQLite's because pg hands
 * BIGINT columns back as strings and BOOLEAN as booleans.
 */
import type { JobError, JobRecord, JobState, ListQuery } from './job-types.js';
import type { AttemptRow } from './store.js';

/** A tandem_jobs row as pg returns it (BIGINT as string, so no precision is lost on the way). */
export interface PgJobRow {
  seq: string;
  id: string;
  tenant_id: string;
  type: string;
  params: string;
  priority: number;
  job_class: string;
  mem_bytes: string;
  state: JobState;
  progress: number;
  message: string;
  attempt: number;
  cancel_requested: boolean;
  idempotency_key: string | null;
  device: string | null;
  placement: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  error: string | null;
  result: string | null;
  timeout_ms: string | null;
  deadline_at: string | null;
}

/** A tandem_attempts row as pg returns it. */
export interface PgAttemptRow {
  job_id: string;
  attempt: number;
  agent: string;
  started_at: string;
  finished_at: string | null;
  outcome: string | null;
  trace: string | null;
}

const num = (v: string | null): number | null => (v === null ? null : Number(v));

/** A job's row as a JobRecord (the result is always inline here: this store writes no result or trace files). */
export function fromPgRow(r: PgJobRow): JobRecord {
  return {
    seq: Number(r.seq),
    id: r.id,
    tenantId: r.tenant_id,
    type: r.type,
    params: JSON.parse(r.params) as Record<string, unknown>,
    priority: r.priority,
    jobClass: r.job_class,
    memBytes: Number(r.mem_bytes),
    state: r.state,
    progress: r.progress,
    message: r.message,
    attempt: r.attempt,
    cancelRequested: r.cancel_requested,
    idempotencyKey: r.idempotency_key,
    device: r.device,
    placement: r.placement,
    createdAt: Number(r.created_at),
    startedAt: num(r.started_at),
    finishedAt: num(r.finished_at),
    error: r.error ? (JSON.parse(r.error) as JobError) : null,
    result: r.result === null ? null : (JSON.parse(r.result) as unknown),
    resultFile: null,
    traceFile: null,
    timeoutMs: num(r.timeout_ms),
    deadlineAt: num(r.deadline_at),
  };
}

/** An attempt-log row as the store's AttemptRow (trace left out when none was written). */
export function fromPgAttempt(a: PgAttemptRow): AttemptRow {
  return {
    jobId: a.job_id,
    attempt: a.attempt,
    agent: a.agent,
    startedAt: Number(a.started_at),
    finishedAt: num(a.finished_at),
    outcome: a.outcome,
    ...(a.trace === null ? {} : { trace: JSON.parse(a.trace) as unknown }),
  };
}

/** The WHERE clause of a list or count, its values pushed onto `args` ($1, $2, ...). */
export function pgListFilter(
  q: Omit<ListQuery, 'limit' | 'beforeSeq'>,
  beforeSeq: number | undefined,
  args: (string | number)[],
): string {
  const where: string[] = [];
  if (q.tenantId !== null) where.push(`tenant_id = $${args.push(q.tenantId)}`);
  if (q.state) where.push(`state = $${args.push(q.state)}`);
  if (q.type) where.push(`type = $${args.push(q.type)}`);
  if (beforeSeq !== undefined) where.push(`seq < $${args.push(beforeSeq)}`);
  return where.length ? `WHERE ${where.join(' AND ')}` : '';
}
