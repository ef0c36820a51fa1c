/**
 * The job store on PostgreSQL, for the scaled-out mode (control planes and agents on many machines).
 * Same records and the same fencing as the SQLite store: a state change is one statement guarded by the
 * state it expects and, once running, by the attempt, so a result lands exactly once however often the
 * queue delivers the job. Each attempt is logged (agent, start, end, outcome, trace) so duplicate
 * executions after a lost agent are counted, and each stalled job's recovery time can be read back.
 * The schema is in pg-schema.ts, the attempt statements in pg-attempt-sql.ts, the row mapping and the
 * listing's WHERE clause in pg-rows.ts; this file keeps the pool and one method per store call.
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
import { FINISH_MANY_SQL, FINISH_SQL, START_ATTEMPTS_SQL, START_ATTEMPT_SQL } from './pg-attempt-sql.js';
import { fromPgAttempt, fromPgRow, pgListFilter, type PgAttemptRow, type PgJobRow } from './pg-rows.js';
import { SCHEMA } from './pg-schema.js';
import {
  HELD_PREFIX,
  type ScaleFinish,
  type AttemptRow,
  type AttemptStart,
  type JobStoreApi,
  type StoreStats,
} from './store.js';

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
      const res = await this.pool.query<PgJobRow>(
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
        out[i] = { ok: true, job: fromPgRow(byId.get(ids[k]!)!), created: true };
      });
    }
    return out;
  }

  private async insertKeyed(j: NewJob, now: number): Promise<InsertOutcome> {
    const params = JSON.stringify(j.params);
    const ins = await this.pool.query<PgJobRow>(
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
    if (ins.rows[0]) return { ok: true, job: fromPgRow(ins.rows[0]), created: true };
    const prev = await this.pool.query<PgJobRow>(
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
    return { ok: true, job: fromPgRow(p), created: false };
  }

  async get(id: string): Promise<JobRecord | null> {
    const r = await this.pool.query<PgJobRow>('SELECT * FROM tandem_jobs WHERE id = $1', [id]);
    return r.rows[0] ? fromPgRow(r.rows[0]) : null;
  }

  async list(q: ListQuery): Promise<JobRecord[]> {
    const args: (string | number)[] = [];
    const where = pgListFilter(q, q.beforeSeq, args);
    const sql = `SELECT * FROM tandem_jobs ${where} ORDER BY seq DESC LIMIT $${args.push(q.limit)}`;
    return (await this.pool.query<PgJobRow>(sql, args)).rows.map(fromPgRow);
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
    const r = await this.pool.query<PgJobRow & { old_state: JobState }>(START_ATTEMPT_SQL, [id, now, agent]);
    const row = r.rows[0];
    return row ? { job: fromPgRow(row), rerun: row.old_state === 'running' } : null;
  }

  /** startAttempt for many jobs in one statement (agents group the deliveries of one event-loop turn). */
  async startAttempts(
    ids: readonly string[],
    agent: string,
    now = Date.now(),
  ): Promise<Map<string, AttemptStart>> {
    const r = await this.pool.query<PgJobRow & { old_state: JobState }>(START_ATTEMPTS_SQL, [
      ids,
      now,
      agent,
    ]);
    return new Map(
      r.rows.map((row) => [row.id, { job: fromPgRow(row), rerun: row.old_state === 'running' }]),
    );
  }

  /** finish for many (job, attempt) pairs in one statement; returns the ids whose outcome landed. */
  async finishMany(
    items: readonly { id: string; attempt: number; o: ScaleFinish }[],
    now = Date.now(),
  ): Promise<Set<string>> {
    const col = <T>(f: (x: { id: string; attempt: number; o: ScaleFinish }) => T) => items.map(f);
    const r = await this.pool.query<{ id: string }>(FINISH_MANY_SQL, [
      col((x) => x.id),
      col((x) => x.attempt),
      col((x) => x.o.state),
      col((x) => (x.o.result === undefined ? null : JSON.stringify(x.o.result))),
      col((x) => (x.o.error ? JSON.stringify(x.o.error) : null)),
      col((x) => (x.o.trace === undefined ? null : JSON.stringify(x.o.trace))),
      now,
    ]);
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
    const r = await this.pool.query<{ n: string }>(FINISH_SQL, [
      id,
      attempt,
      o.state,
      now,
      o.result === undefined ? null : JSON.stringify(o.result),
      o.error ? JSON.stringify(o.error) : null,
      o.trace === undefined ? null : JSON.stringify(o.trace),
    ]);
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
    const r = await this.pool.query<PgAttemptRow>(
      'SELECT * FROM tandem_attempts WHERE job_id = $1 ORDER BY attempt',
      [id],
    );
    return r.rows.map(fromPgAttempt);
  }

  async overdue(before: number, limit: number): Promise<JobRecord[]> {
    const r = await this.pool.query<PgJobRow>(
      `SELECT * FROM tandem_jobs WHERE state = 'running' AND deadline_at < $1 ORDER BY deadline_at LIMIT $2`,
      [before, limit],
    );
    return r.rows.map(fromPgRow);
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
