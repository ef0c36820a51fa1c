/**
 * The job store on PostgreSQL, for the scaled-out mode (control planes and agents on many machines).
 * Same records and the same fencing as the SQLite store: a state change is one statement guarded by the
 * state it expects and, once running, by the attempt, so a result lands exactly once however often the
 * queue delivers the job. Each attempt is logged (agent, start, end, outcome, trace) so duplicate
 * executions after a lost agent are counted, and each stalled job's recovery time can be read back.
 */
import pg from 'pg';
import { TandemError } from '../../core/errors.js';
import { errorMessage, redactUrl } from '../queue/queue.js';
import {
  newJobId,
  type InsertOutcome,
  type JobError,
  type JobRecord,
  type JobState,
  type ListQuery,
  type NewJob,
} from './job-store.js';
import {
  HELD_PREFIX,
  type ScaleFinish,
  type AttemptRow,
  type AttemptStart,
  type JobStoreApi,
  type StoreStats,
} from './store.js';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS tandem_jobs (
  seq BIGSERIAL PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  tenant_id TEXT NOT NULL,
  type TEXT NOT NULL,
  params TEXT NOT NULL,
  priority INTEGER NOT NULL,
  job_class TEXT NOT NULL,
  mem_bytes BIGINT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
  progress DOUBLE PRECISION NOT NULL DEFAULT 0,
  message TEXT NOT NULL DEFAULT '',
  attempt INTEGER NOT NULL DEFAULT 0,
  cancel_requested BOOLEAN NOT NULL DEFAULT false,
  idempotency_key TEXT,
  device TEXT,
  placement TEXT,
  created_at BIGINT NOT NULL,
  started_at BIGINT,
  finished_at BIGINT,
  error TEXT,
  result TEXT
);
ALTER TABLE tandem_jobs ADD COLUMN IF NOT EXISTS timeout_ms BIGINT;
ALTER TABLE tandem_jobs ADD COLUMN IF NOT EXISTS deadline_at BIGINT;
CREATE UNIQUE INDEX IF NOT EXISTS tandem_jobs_idem ON tandem_jobs (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS tandem_jobs_tenant_seq ON tandem_jobs (tenant_id, seq);
CREATE INDEX IF NOT EXISTS tandem_jobs_queued_tenant ON tandem_jobs (tenant_id) WHERE state = 'queued';
CREATE INDEX IF NOT EXISTS tandem_jobs_finished_at ON tandem_jobs (finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS tandem_jobs_running_deadline ON tandem_jobs (deadline_at) WHERE state = 'running';
CREATE TABLE IF NOT EXISTS tandem_attempts (
  job_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  agent TEXT NOT NULL,
  started_at BIGINT NOT NULL,
  rerun BOOLEAN NOT NULL,
  finished_at BIGINT,
  outcome TEXT,
  trace TEXT,
  PRIMARY KEY (job_id, attempt)
);`;

interface Row {
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

const num = (v: string | null): number | null => (v === null ? null : Number(v));

function fromRow(r: Row): JobRecord {
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

export class PgJobStore implements JobStoreApi {
  private constructor(private readonly pool: pg.Pool) {}

  /** Connects and creates the tables; an unreachable server is TANDEM_ERR_UNAVAILABLE naming the URL. */
  static async open(url: string, poolSize = 8): Promise<PgJobStore> {
    // Waiting for a pooled connection under load is normal; only the first connect has a short timeout.
    // query_timeout: a query caught by a server restart can hang on a half-dead socket; give up on it
    // (callers retry) instead of holding a job forever.
    const pool = new pg.Pool({
      connectionString: url,
      max: poolSize,
      connectionTimeoutMillis: 10_000,
      query_timeout: 10_000,
      keepAlive: true,
    });
    // An idle client losing its server must not crash the process; the next query reconnects.
    pool.on('error', () => undefined);
    try {
      const probe = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
      probe.on('error', () => undefined);
      await probe.connect();
      await probe.end();
      await pool.query(SCHEMA);
    } catch (e) {
      await pool.end().catch(() => undefined);
      throw new TandemError(
        'TANDEM_ERR_UNAVAILABLE',
        `PostgreSQL at ${redactUrl(url)} is unreachable: ${errorMessage(e)}`,
        { url: redactUrl(url) },
      );
    }
    return new PgJobStore(pool);
  }

  async insertMany(jobs: readonly NewJob[], now = Date.now()): Promise<InsertOutcome[]> {
    const out: InsertOutcome[] = new Array<InsertOutcome>(jobs.length);
    const plain: number[] = [];
    for (let i = 0; i < jobs.length; i++) {
      if (jobs[i]!.idempotencyKey === null) plain.push(i);
      else out[i] = await this.insertKeyed(jobs[i]!, now);
    }
    if (plain.length > 0) {
      // One statement for the whole group: a multi-row insert is one round trip and one commit.
      const ids = plain.map(() => newJobId(now));
      const col = <T>(f: (j: NewJob) => T) => plain.map((i) => f(jobs[i]!));
      const res = await this.pool.query<Row>(
        `INSERT INTO tandem_jobs (id, tenant_id, type, params, priority, job_class, mem_bytes, timeout_ms, state, created_at)
         SELECT *, 'queued', $9::bigint FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $6::text[], $7::bigint[], $8::bigint[])
         RETURNING *`,
        [
          ids,
          col((j) => j.tenantId),
          col((j) => j.type),
          col((j) => JSON.stringify(j.params)),
          col((j) => j.priority),
          col((j) => j.jobClass),
          col((j) => j.memBytes),
          col((j) => j.timeoutMs ?? null),
          now,
        ],
      );
      const byId = new Map(res.rows.map((r) => [r.id, r]));
      plain.forEach((i, k) => {
        out[i] = { ok: true, job: fromRow(byId.get(ids[k]!)!), created: true };
      });
    }
    return out;
  }

  private async insertKeyed(j: NewJob, now: number): Promise<InsertOutcome> {
    const params = JSON.stringify(j.params);
    const ins = await this.pool.query<Row>(
      `INSERT INTO tandem_jobs (id, tenant_id, type, params, priority, job_class, mem_bytes, state, idempotency_key, created_at, timeout_ms)
       VALUES ($1, $2, $3, $4, $5, $6, $7, 'queued', $8, $9, $10)
       ON CONFLICT (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING RETURNING *`,
      [
        newJobId(now),
        j.tenantId,
        j.type,
        params,
        j.priority,
        j.jobClass,
        j.memBytes,
        j.idempotencyKey,
        now,
        j.timeoutMs ?? null,
      ],
    );
    if (ins.rows[0]) return { ok: true, job: fromRow(ins.rows[0]), created: true };
    const prev = await this.pool.query<Row>(
      'SELECT * FROM tandem_jobs WHERE tenant_id = $1 AND idempotency_key = $2',
      [j.tenantId, j.idempotencyKey],
    );
    const p = prev.rows[0]!;
    if (p.type !== j.type || p.params !== params)
      return {
        ok: false,
        error: new TandemError('TANDEM_ERR_CONFLICT', 'this idempotency key was used with another job', {
          idempotencyKey: j.idempotencyKey,
          jobId: p.id,
        }),
      };
    return { ok: true, job: fromRow(p), created: false };
  }

  async get(id: string): Promise<JobRecord | null> {
    const r = await this.pool.query<Row>('SELECT * FROM tandem_jobs WHERE id = $1', [id]);
    return r.rows[0] ? fromRow(r.rows[0]) : null;
  }

  async list(q: ListQuery): Promise<JobRecord[]> {
    const args: (string | number)[] = [];
    const where = pgListFilter(q, q.beforeSeq, args);
    const sql = `SELECT * FROM tandem_jobs ${where} ORDER BY seq DESC LIMIT $${args.push(q.limit)}`;
    return (await this.pool.query<Row>(sql, args)).rows.map(fromRow);
  }

  /** How many jobs match `q`'s filters, counted up to `cap` (as JobStore.count). */
  async count(
    q: Omit<ListQuery, 'limit' | 'beforeSeq'>,
    cap = 10_000,
  ): Promise<{ total: number; exact: boolean }> {
    const args: (string | number)[] = [];
    const where = pgListFilter(q, undefined, args);
    const sql = `SELECT COUNT(*)::int AS n FROM (SELECT 1 FROM tandem_jobs ${where} LIMIT $${args.push(cap)}) m`;
    const n = (await this.pool.query<{ n: number }>(sql, args)).rows[0]!.n;
    return { total: n, exact: n < cap };
  }

  async startAttempt(id: string, agent: string, now = Date.now()): Promise<AttemptStart | null> {
    // One round trip: lock the row, bump the attempt, log the attempt (and whether one was in flight).
    // The deadline is set at the first start and kept by re-runs (runner/deadlines.ts says why).
    const r = await this.pool.query<Row & { old_state: JobState }>(
      `WITH old AS (SELECT id, state AS old_state FROM tandem_jobs WHERE id = $1 FOR UPDATE),
       upd AS (
         UPDATE tandem_jobs j SET state = 'running', attempt = j.attempt + 1, started_at = $2, device = $3,
           progress = 0, message = '', deadline_at = COALESCE(j.deadline_at, $2 + j.timeout_ms)
         FROM old WHERE j.id = old.id AND j.state IN ('queued', 'running') AND NOT j.cancel_requested
         RETURNING j.*, old.old_state),
       log AS (INSERT INTO tandem_attempts (job_id, attempt, agent, started_at, rerun)
         SELECT id, attempt, $3, $2, old_state = 'running' FROM upd)
       SELECT * FROM upd`,
      [id, now, agent],
    );
    const row = r.rows[0];
    return row ? { job: fromRow(row), rerun: row.old_state === 'running' } : null;
  }

  /** startAttempt for many jobs in one statement (agents group the deliveries of one event-loop turn). */
  async startAttempts(
    ids: readonly string[],
    agent: string,
    now = Date.now(),
  ): Promise<Map<string, AttemptStart>> {
    const r = await this.pool.query<Row & { old_state: JobState }>(
      `WITH old AS (SELECT id, state AS old_state FROM tandem_jobs WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE),
       upd AS (
         UPDATE tandem_jobs j SET state = 'running', attempt = j.attempt + 1, started_at = $2, device = $3,
           progress = 0, message = '', deadline_at = COALESCE(j.deadline_at, $2 + j.timeout_ms)
         FROM old WHERE j.id = old.id AND j.state IN ('queued', 'running') AND NOT j.cancel_requested
         RETURNING j.*, old.old_state),
       log AS (INSERT INTO tandem_attempts (job_id, attempt, agent, started_at, rerun)
         SELECT id, attempt, $3, $2, old_state = 'running' FROM upd)
       SELECT * FROM upd`,
      [ids, now, agent],
    );
    return new Map(r.rows.map((row) => [row.id, { job: fromRow(row), rerun: row.old_state === 'running' }]));
  }

  /** finish for many (job, attempt) pairs in one statement; returns the ids whose outcome landed. */
  async finishMany(
    items: readonly { id: string; attempt: number; o: ScaleFinish }[],
    now = Date.now(),
  ): Promise<Set<string>> {
    const col = <T>(f: (x: { id: string; attempt: number; o: ScaleFinish }) => T) => items.map(f);
    const r = await this.pool.query<{ id: string }>(
      `WITH v AS (
         SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::text[], $6::text[])
           AS v(id, attempt, state, result, error, trace)),
       upd AS (
         UPDATE tandem_jobs j SET state = v.state, finished_at = $7, result = v.result, error = v.error,
           progress = CASE WHEN v.state = 'succeeded' THEN 1 ELSE j.progress END
         FROM v WHERE j.id = v.id AND j.state = 'running' AND j.attempt = v.attempt RETURNING j.id, j.attempt),
       log AS (
         UPDATE tandem_attempts a SET finished_at = $7, trace = v.trace,
           outcome = CASE WHEN EXISTS (SELECT 1 FROM upd WHERE upd.id = v.id) THEN v.state ELSE 'superseded' END
         FROM v WHERE a.job_id = v.id AND a.attempt = v.attempt AND a.outcome IS NULL),
       lost AS (
         UPDATE tandem_attempts a SET outcome = 'lost'
         FROM upd WHERE a.job_id = upd.id AND a.attempt < upd.attempt AND a.outcome IS NULL)
       SELECT id FROM upd`,
      [
        col((x) => x.id),
        col((x) => x.attempt),
        col((x) => x.o.state),
        col((x) => (x.o.result === undefined ? null : JSON.stringify(x.o.result))),
        col((x) => (x.o.error ? JSON.stringify(x.o.error) : null)),
        col((x) => (x.o.trace === undefined ? null : JSON.stringify(x.o.trace))),
        now,
      ],
    );
    return new Set(r.rows.map((x) => x.id));
  }

  async setProgress(id: string, attempt: number, progress: number, message: string): Promise<boolean> {
    const r = await this.pool.query(
      `UPDATE tandem_jobs SET progress = $1, message = $2 WHERE id = $3 AND state = 'running' AND attempt = $4`,
      [progress, message, id, attempt],
    );
    return r.rowCount === 1;
  }

  async finish(id: string, attempt: number, o: ScaleFinish, now = Date.now()): Promise<boolean> {
    const r = await this.pool.query<{ n: string }>(
      `WITH upd AS (
         UPDATE tandem_jobs SET state = $3, finished_at = $4, result = $5, error = $6,
           progress = CASE WHEN $3 = 'succeeded' THEN 1 ELSE progress END
         WHERE id = $1 AND state = 'running' AND attempt = $2 RETURNING id),
       log AS (
         UPDATE tandem_attempts SET finished_at = $4, trace = $7,
           outcome = CASE WHEN EXISTS (SELECT 1 FROM upd) THEN $3 ELSE 'superseded' END
         WHERE job_id = $1 AND attempt = $2 AND outcome IS NULL),
       lost AS (
         UPDATE tandem_attempts SET outcome = 'lost'
         WHERE job_id = $1 AND attempt < $2 AND outcome IS NULL AND EXISTS (SELECT 1 FROM upd))
       SELECT COUNT(*) AS n FROM upd`,
      [
        id,
        attempt,
        o.state,
        now,
        o.result === undefined ? null : JSON.stringify(o.result),
        o.error ? JSON.stringify(o.error) : null,
        o.trace === undefined ? null : JSON.stringify(o.trace),
      ],
    );
    return Number(r.rows[0]?.n ?? 0) === 1;
  }

  async hold(id: string, reason: string): Promise<boolean> {
    const r = await this.pool.query(
      `UPDATE tandem_jobs SET message = $2 WHERE id = $1 AND state = 'queued'`,
      [id, `${HELD_PREFIX}${reason}`.slice(0, 500)],
    );
    return r.rowCount === 1;
  }

  async cancelQueued(id: string, now = Date.now()): Promise<boolean> {
    const err: JobError = {
      code: 'TANDEM_ERR_CANCELLED',
      message: 'cancelled before it started',
      details: {},
    };
    const r = await this.pool.query(
      `UPDATE tandem_jobs SET state = 'cancelled', cancel_requested = true, finished_at = $2, error = $3
       WHERE id = $1 AND state = 'queued'`,
      [id, now, JSON.stringify(err)],
    );
    return r.rowCount === 1;
  }

  async requestCancel(id: string): Promise<boolean> {
    const r = await this.pool.query(
      `UPDATE tandem_jobs SET cancel_requested = true WHERE id = $1 AND state = 'running'`,
      [id],
    );
    return r.rowCount === 1;
  }

  async cancelRequested(ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const r = await this.pool.query<{ id: string }>(
      `SELECT id FROM tandem_jobs WHERE id = ANY($1) AND state = 'running' AND cancel_requested`,
      [ids],
    );
    return new Set(r.rows.map((x) => x.id));
  }

  async attempts(id: string): Promise<AttemptRow[]> {
    const r = await this.pool.query<{
      job_id: string;
      attempt: number;
      agent: string;
      started_at: string;
      finished_at: string | null;
      outcome: string | null;
      trace: string | null;
    }>('SELECT * FROM tandem_attempts WHERE job_id = $1 ORDER BY attempt', [id]);
    return r.rows.map((a) => ({
      jobId: a.job_id,
      attempt: a.attempt,
      agent: a.agent,
      startedAt: Number(a.started_at),
      finishedAt: num(a.finished_at),
      outcome: a.outcome,
      ...(a.trace === null ? {} : { trace: JSON.parse(a.trace) as unknown }),
    }));
  }

  async overdue(before: number, limit: number): Promise<JobRecord[]> {
    const r = await this.pool.query<Row>(
      `SELECT * FROM tandem_jobs WHERE state = 'running' AND deadline_at < $1 ORDER BY deadline_at LIMIT $2`,
      [before, limit],
    );
    return r.rows.map(fromRow);
  }

  async stats(): Promise<StoreStats> {
    const counts: Record<JobState, number> = { queued: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0 };
    const c = await this.pool.query<{ state: JobState; n: string; held: string }>(
      `SELECT state, COUNT(*) AS n, COUNT(*) FILTER (WHERE message LIKE '${HELD_PREFIX}%') AS held
       FROM tandem_jobs GROUP BY state`,
    );
    let held = 0;
    for (const r of c.rows) {
      counts[r.state] = Number(r.n);
      if (r.state === 'queued') held = Number(r.held);
    }
    const d = await this.pool.query<{ n: string }>('SELECT COUNT(*) AS n FROM tandem_attempts WHERE rerun');
    return { counts, duplicateExecutions: Number(d.rows[0]?.n ?? 0), held };
  }

  /** Raw SQL for benchmarks and tests (recovery times from the attempt log). */
  query<R extends pg.QueryResultRow>(sql: string, args: unknown[] = []): Promise<pg.QueryResult<R>> {
    return this.pool.query<R>(sql, args);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

/** The WHERE clause of a list or count, its values pushed onto `args` ($1, $2, ...). */
function pgListFilter(
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
