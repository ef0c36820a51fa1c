/**
 * Durable job records. Every state change is one SQL statement guarded by the state it expects (and,
 * once running, by the attempt number), so a stale runner from before a restart can never overwrite a
 * newer outcome and a result is committed exactly once.
 */
import { randomBytes } from 'node:crypto';
import { TandemError } from '../../core/errors.js';
import type { Db } from './db.js';
import { WalSync, type SyncCallback } from './wal-sync.js';

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

interface JobRow {
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

function fromRow(r: JobRow): JobRecord {
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
function insertError(e: unknown): TandemError {
  if (e instanceof TandemError) return e;
  return new TandemError(
    'TANDEM_ERR_UNAVAILABLE',
    `storing the job: ${e instanceof Error ? e.message : String(e)}`,
    {},
    { cause: e },
  );
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

/** The WHERE clause of a list or count (SQLite placeholders). */
function listFilter(
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
