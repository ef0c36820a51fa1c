/**
 * The jobs table's rows and the SQL helpers around them: a row to a JobRecord, job ids, the WHERE
 * clause of a listing, and the error a failed insert becomes.
 */
import { randomBytes } from 'node:crypto';
import { TandemError } from '../../core/errors.js';
import type { JobError, JobRecord, JobState, ListQuery } from './job-types.js';

export interface JobRow {
  seq: number;
  id: string;
  tenant_id: string;
  type: string;
  params: string;
  priority: number;
  job_class: string;
  mem_bytes: number;
  state: JobState;
  progress: number;
  message: string;
  attempt: number;
  cancel_requested: number;
  idempotency_key: string | null;
  device: string | null;
  placement: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  error: string | null;
  result: string | null;
  result_file: string | null;
  trace_file: string | null;
  timeout_ms: number | null;
  deadline_at: number | null;
}

export function fromRow(r: JobRow): JobRecord {
  return {
    seq: r.seq,
    id: r.id,
    tenantId: r.tenant_id,
    type: r.type,
    params: JSON.parse(r.params) as Record<string, unknown>,
    priority: r.priority,
    jobClass: r.job_class,
    memBytes: r.mem_bytes,
    state: r.state,
    progress: r.progress,
    message: r.message,
    attempt: r.attempt,
    cancelRequested: r.cancel_requested !== 0,
    idempotencyKey: r.idempotency_key,
    device: r.device,
    placement: r.placement,
    createdAt: r.created_at,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    error: r.error ? (JSON.parse(r.error) as JobError) : null,
    result: r.result === null ? null : (JSON.parse(r.result) as unknown),
    resultFile: r.result_file,
    traceFile: r.trace_file,
    timeoutMs: r.timeout_ms,
    deadlineAt: r.deadline_at,
  };
}

// Random bytes drawn in blocks: one syscall per 680 ids instead of one per id (it showed in profiles).
let pool = Buffer.alloc(0);
let poolAt = 0;

/** Time-ordered, unguessable job id: 8 hex digits of seconds then 12 random hex digits. */
export function newJobId(now = Date.now()): string {
  if (poolAt + 6 > pool.length) {
    pool = randomBytes(4080);
    poolAt = 0;
  }
  const rand = pool.toString('hex', poolAt, poolAt + 6);
  poolAt += 6;
  return `job_${Math.floor(now / 1000)
    .toString(16)
    .padStart(8, '0')}${rand}`;
}

/** Why one job of a group could not be inserted (the others commit). */
export function insertError(e: unknown): TandemError {
  if (e instanceof TandemError) return e;
  return new TandemError(
    'TANDEM_ERR_UNAVAILABLE',
    `storing the job: ${e instanceof Error ? e.message : String(e)}`,
    {},
    { cause: e },
  );
}

/** The WHERE clause of a list or count (SQLite placeholders). */
export function listFilter(
  q: Omit<ListQuery, 'limit' | 'beforeSeq'>,
  beforeSeq: number | undefined,
): { where: string; args: (string | number)[] } {
  const where: string[] = [];
  const args: (string | number)[] = [];
  if (q.tenantId !== null) {
    where.push('tenant_id = ?');
    args.push(q.tenantId);
  }
  if (q.state) {
    where.push('state = ?');
    args.push(q.state);
  }
  if (q.type) {
    where.push('type = ?');
    args.push(q.type);
  }
  if (beforeSeq !== undefined) {
    where.push('seq < ?');
    args.push(beforeSeq);
  }
  return { where: where.length ? `WHERE ${where.join(' AND ')}` : '', args };
}
