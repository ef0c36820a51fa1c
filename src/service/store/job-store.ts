/**
 * Durable job records. Every state change is one SQL statement guarded by the state it expects (and,
 * once running, by the attempt number), so a stale runner from before a restart can never overwrite a
 * newer outcome and a result is committed exactly once.
 */
import { TandemError } from '../../core/errors.js';
import type { Db } from './db.js';
import { WalSync, type SyncCallback } from './wal-sync.js';
import { fromRow, insertError, listFilter, newJobId, type JobRow } from './job-rows.js';
import type {
  FinishOutcome,
  InsertClaim,
  InsertOutcome,
  JobError,
  JobRecord,
  JobState,
  ListQuery,
  NewJob,
} from './job-types.js';

export * from './job-types.js';
export { newJobId };

export class JobStore {
  private readonly stmts;
  /** synchronous = FULL on this connection (every commit fsynced). */
  private readonly fsyncEach: boolean;

  /** Made once: db.transaction() builds its wrappers on every call (~30 µs a submit on the H200 host). */
  private readonly insertTx: (
    jobs: readonly NewJob[],
    now: number,
    claims?: readonly (InsertClaim | null)[],
  ) => InsertOutcome[];
  /** Runs a function in one transaction (the dispatcher's turn commit); made once, like insertTx. */
  private readonly turnTx: (fn: () => void) => void;
  /** With full durability: the fdatasync of the WAL that group commits wait for off the loop. */
  readonly walSync: WalSync | null;

  constructor(private readonly db: Db) {
    this.turnTx = db.transaction((fn: () => void): void => fn());
    // Each job succeeds or fails on its own. Its insert is one statement, and SQLite rolls back a
    // statement that fails (a constraint, a trigger's ABORT) alone, keeping the transaction: the same
    // as a SAVEPOINT around it, without the ~30 % it added to the insert (bench/group-commit.ts).
    this.insertTx = db.transaction(
      (jobs: readonly NewJob[], now: number, claims?: readonly (InsertClaim | null)[]): InsertOutcome[] =>
        jobs.map((j, i) => {
          try {
            return this.insertOne(j, now, claims?.[i] ?? null);
          } catch (e) {
            // SQLITE_FULL, IOERR, BUSY may roll back the whole transaction: then the group fails as one.
            if (!db.inTransaction) throw e;
            return { ok: false, error: insertError(e) };
          }
        }),
    );
    this.fsyncEach = (db.pragma('synchronous', { simple: true }) as number) >= 2;
    this.walSync = this.fsyncEach && !db.memory ? new WalSync(`${db.name}-wal`) : null;
    this.stmts = {
      insert: db.prepare(
        `INSERT INTO jobs (id, tenant_id, type, params, priority, job_class, mem_bytes, state, idempotency_key, created_at, timeout_ms)
         VALUES (?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?)`,
      ),
      byKey: db.prepare('SELECT * FROM jobs WHERE tenant_id = ? AND idempotency_key = ?'),
      byId: db.prepare('SELECT * FROM jobs WHERE id = ?'),
      claim: db.prepare(
        `UPDATE jobs SET state = 'running', attempt = attempt + 1, started_at = ?, device = ?, placement = ?, progress = 0, message = '',
           deadline_at = COALESCE(deadline_at, ?)
         WHERE id = ? AND state = 'queued' AND cancel_requested = 0
         RETURNING *`,
      ),
      // The same claim when the caller holds the queued record: only the attempt comes back (no JSON).
      claimAttempt: db.prepare(
        `UPDATE jobs SET state = 'running', attempt = attempt + 1, started_at = ?, device = ?, placement = ?, progress = 0, message = '',
           deadline_at = COALESCE(deadline_at, ?)
         WHERE id = ? AND state = 'queued' AND cancel_requested = 0
         RETURNING attempt, deadline_at AS deadlineAt`,
      ),
      // A job inserted already claimed (attempt 1): what insert + claim commit, in one statement.
      insertRunning: db.prepare(
        `INSERT INTO jobs (id, tenant_id, type, params, priority, job_class, mem_bytes, state, idempotency_key, created_at,
           timeout_ms, attempt, started_at, device, placement, deadline_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, 1, ?, ?, ?, ?)`,
      ),
      progress: db.prepare(
        `UPDATE jobs SET progress = ?, message = ? WHERE id = ? AND state = 'running' AND attempt = ?`,
      ),
      finish: db.prepare(
        `UPDATE jobs SET state = ?, finished_at = ?, result = ?, result_file = ?, error = ?, trace_file = ?,
           device = CASE WHEN ? THEN ? ELSE device END, progress = CASE WHEN ? = 'succeeded' THEN 1 ELSE progress END
         WHERE id = ? AND state = 'running' AND attempt = ?`,
      ),
      cancelQueued: db.prepare(
        `UPDATE jobs SET state = 'cancelled', cancel_requested = 1, finished_at = ?, error = ? WHERE id = ? AND state = 'queued'`,
      ),
      requestCancel: db.prepare(`UPDATE jobs SET cancel_requested = 1 WHERE id = ? AND state = 'running'`),
      requeueRunning: db.prepare(`UPDATE jobs SET state = 'queued', device = NULL WHERE state = 'running'`),
      queued: db.prepare(
        `SELECT id, seq, tenant_id AS tenantId, priority, mem_bytes AS memBytes FROM jobs WHERE state = 'queued' ORDER BY seq`,
      ),
      counts: db.prepare(`SELECT state, COUNT(*) AS n FROM jobs GROUP BY state`),
    };
  }

  /**
   * Inserts a group of submissions in one transaction (one fsync for all of them). `claims[i]`, when
   * given, inserts job i already running (attempt 1, started now on that placement): the dispatcher had
   * room for it, so its claim shares this commit instead of costing one of its own. A restart re-queues
   * it like any running job. A duplicate (idempotency key) is returned as stored, unclaimed.
   * Each job succeeds or fails on its own: one whose insert fails gets `{ ok: false }` (its statement is
   * rolled back alone) and the others still commit. Only an error that ends the whole transaction (disk
   * full, I/O) throws. insertOne must stay one write statement for this to hold.
   */
  insertMany(
    jobs: readonly NewJob[],
    now = Date.now(),
    claims?: readonly (InsertClaim | null)[],
    sync: 'now' | 'deferred' = 'now',
  ): InsertOutcome[] {
    return this.unsynced(sync, () => this.insertTx(jobs, now, claims));
  }

  /**
   * `fn`'s commit without a sync on this thread when `sync` is 'deferred' and every commit is fsynced
   * (durability full): the caller must wait for `afterDurable` before it acknowledges anything.
   */
  private unsynced<T>(sync: 'now' | 'deferred', fn: () => T): T {
    if (sync === 'now' || !this.walSync) return fn();
    // exec, not pragma(): the same statement without a Statement object, 1-2 µs instead of 5-10 per
    // switch, and the switch runs twice per group commit and per dispatcher turn.
    this.db.exec('PRAGMA synchronous = NORMAL');
    try {
      return fn();
    } finally {
      this.db.exec('PRAGMA synchronous = FULL');
    }
  }

  /**
   * Calls `cb` once every commit made so far is on disk: at once (synchronously) when each commit syncs
   * itself or durability is normal; after an fdatasync of the WAL on the thread pool (wal-sync.ts) when
   * commits were deferred.
   */
  afterDurable(cb: SyncCallback): void {
    if (this.walSync) this.walSync.after(cb);
    else cb(null);
  }

  /**
   * Runs `fn` in one transaction: one commit, so one fsync, for every write it makes (the dispatcher's
   * claims and finishes of one event-loop turn). Each of those writes is one statement, which SQLite
   * rolls back alone when it fails (a constraint, a trigger's ABORT): `fn` catches it and goes on, and
   * the others commit. An error that ends the whole transaction (disk full, I/O; `inTransaction` is then
   * false) or a failed COMMIT throws from here, with everything `fn` wrote rolled back.
   */
  inOneCommit(fn: () => void, sync: 'now' | 'deferred' = 'now'): void {
    this.unsynced(sync, () => this.turnTx(fn));
  }

  /** Whether a transaction is open (false after an error inside `inOneCommit` ended it). */
  get inTransaction(): boolean {
    return this.db.inTransaction;
  }

  /** One write statement (the insert), so that a failure leaves nothing behind (see insertTx). */
  private insertOne(j: NewJob, now: number, claim: InsertClaim | null): InsertOutcome {
    const paramsJson = JSON.stringify(j.params);
    if (j.idempotencyKey !== null) {
      const prev = this.stmts.byKey.get(j.tenantId, j.idempotencyKey) as JobRow | undefined;
      if (prev) {
        if (prev.type !== j.type || prev.params !== paramsJson)
          return {
            ok: false,
            error: new TandemError('TANDEM_ERR_CONFLICT', 'this idempotency key was used with another job', {
              idempotencyKey: j.idempotencyKey,
              jobId: prev.id,
            }),
          };
        return { ok: true, job: fromRow(prev), created: false };
      }
    }
    const id = newJobId(now);
    const fields = [
      id,
      j.tenantId,
      j.type,
      paramsJson,
      j.priority,
      j.jobClass,
      j.memBytes,
      j.idempotencyKey,
      now,
      j.timeoutMs ?? null,
    ];
    const deadlineAt = claim?.deadlineAt ?? null;
    const info = claim
      ? this.stmts.insertRunning.run(...fields, now, claim.device, claim.placement, deadlineAt)
      : this.stmts.insert.run(...fields);
    const job: JobRecord = {
      seq: Number(info.lastInsertRowid),
      id,
      tenantId: j.tenantId,
      type: j.type,
      params: j.params,
      priority: j.priority,
      jobClass: j.jobClass,
      memBytes: j.memBytes,
      state: claim ? 'running' : 'queued',
      progress: 0,
      message: '',
      attempt: claim ? 1 : 0,
      cancelRequested: false,
      idempotencyKey: j.idempotencyKey,
      device: claim ? claim.device : null,
      placement: claim ? claim.placement : null,
      createdAt: now,
      startedAt: claim ? now : null,
      finishedAt: null,
      error: null,
      result: null,
      resultFile: null,
      traceFile: null,
      timeoutMs: j.timeoutMs ?? null,
      deadlineAt,
    };
    return { ok: true, job, created: true };
  }

  get(id: string): JobRecord | null {
    const r = this.stmts.byId.get(id) as JobRow | undefined;
    return r ? fromRow(r) : null;
  }

  list(q: ListQuery): JobRecord[] {
    const { where, args } = listFilter(q, q.beforeSeq);
    const sql = `SELECT * FROM jobs ${where} ORDER BY seq DESC LIMIT ?`;
    return (this.db.prepare(sql).all(...args, q.limit) as JobRow[]).map(fromRow);
  }

  /**
   * How many jobs match `q`'s filters (its cursor and limit aside), counted up to `cap`: a list page's
   * total. The cap bounds what a dashboard polling every second costs on a table of millions of jobs
   * (`exact` false: there are at least `cap`).
   */
  count(q: Omit<ListQuery, 'limit' | 'beforeSeq'>, cap = 10_000): { total: number; exact: boolean } {
    const { where, args } = listFilter(q, undefined);
    const sql = `SELECT COUNT(*) AS n FROM (SELECT 1 FROM jobs ${where} LIMIT ?)`;
    const n = (this.db.prepare(sql).get(...args, cap) as { n: number }).n;
    return { total: n, exact: n < cap };
  }

  /**
   * queued → running; returns the claimed record (attempt incremented) or null if it was not queued.
   * With `queued` (the record as inserted, which the dispatcher holds) the row is not read back: only
   * the new attempt is, and the record is rebuilt from it (no JSON parsing on the dispatch path).
   * `deadlineAt` is the job's deadline if this is its first start; one set by an earlier start is kept.
   */
  claim(
    id: string,
    device: string | null,
    placement: string | null = null,
    now = Date.now(),
    queued?: JobRecord,
    deadlineAt: number | null = null,
  ): JobRecord | null {
    // .all(), not .get(): with RETURNING, get() returns the row before the statement's autocommit and
    // better-sqlite3 drops an error of that commit (disk full), so a claim that never landed looked
    // done; all() steps to the end and throws it.
    if (queued) {
      const row = (
        this.stmts.claimAttempt.all(now, device, placement, deadlineAt, id) as {
          attempt: number;
          deadlineAt: number | null;
        }[]
      )[0];
      if (row === undefined) return null;
      return {
        ...queued,
        state: 'running',
        attempt: row.attempt,
        deadlineAt: row.deadlineAt,
        startedAt: now,
        device,
        placement,
        progress: 0,
        message: '',
        cancelRequested: false,
      };
    }
    // RETURNING: the claimed row in the same statement (no second query on the dispatch path).
    const r = (this.stmts.claim.all(now, device, placement, deadlineAt, id) as JobRow[])[0];
    return r ? fromRow(r) : null;
  }

  setProgress(id: string, attempt: number, progress: number, message: string): boolean {
    // Progress is advisory (a re-run starts again from 0), so it gets no fsync of its own: the event loop
    // does not wait on the disk for it, and the next durable commit (WAL order) makes it durable too.
    if (!this.fsyncEach) return this.stmts.progress.run(progress, message, id, attempt).changes === 1;
    this.db.exec('PRAGMA synchronous = NORMAL');
    try {
      return this.stmts.progress.run(progress, message, id, attempt).changes === 1;
    } finally {
      this.db.exec('PRAGMA synchronous = FULL');
    }
  }

  /** running (this attempt) → terminal. False when another attempt or a cancel already decided. */
  finish(id: string, attempt: number, o: FinishOutcome, now = Date.now()): boolean {
    const info = this.stmts.finish.run(
      o.state,
      now,
      o.result === undefined ? null : JSON.stringify(o.result),
      o.resultFile ?? null,
      o.error ? JSON.stringify(o.error) : null,
      o.traceFile ?? null,
      o.device === undefined ? 0 : 1,
      o.device ?? null,
      o.state,
      id,
      attempt,
    );
    return info.changes === 1;
  }

  cancelQueued(id: string, now = Date.now()): boolean {
    const err: JobError = {
      code: 'TANDEM_ERR_CANCELLED',
      message: 'cancelled before it started',
      details: {},
    };
    return this.stmts.cancelQueued.run(now, JSON.stringify(err), id).changes === 1;
  }

  requestCancel(id: string): boolean {
    return this.stmts.requestCancel.run(id).changes === 1;
  }

  /** At startup: jobs that were running when the process died go back to the queue. */
  requeueRunning(): number {
    return this.stmts.requeueRunning.run().changes;
  }

  /** The dispatch fields of every queued job (what a restart loads: no params, no JSON parsing). */
  queued(): { id: string; seq: number; tenantId: string; priority: number; memBytes: number }[] {
    return this.stmts.queued.all() as {
      id: string;
      seq: number;
      tenantId: string;
      priority: number;
      memBytes: number;
    }[];
  }

  countsByState(): Record<JobState, number> {
    const out: Record<JobState, number> = { queued: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0 };
    for (const r of this.stmts.counts.all() as { state: JobState; n: number }[]) out[r.state] = r.n;
    return out;
  }
}
