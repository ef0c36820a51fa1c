/**
 * The embedded queue: SQLite (WAL) in the data directory, the default when there is one machine. Any
 * number of processes on that machine may add and consume through the same file: a take is one
 * IMMEDIATE transaction, running jobs hold a lock lease that their consumer renews, and every consumer
 * looks for lapsed leases (a consumer killed with -9) and puts those jobs back, exactly as BullMQ does
 * on Redis. Outcomes are group-committed (one transaction per event-loop turn). Events are seen by the
 * process whose queue object made the change.
 */
import Database from 'better-sqlite3';
import { EventEmitter } from 'node:events';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { TandemError } from '../../core/errors.js';
import { EmbeddedConsumer, type ConsumerHost, type Outcome, type Row } from './embedded-consumer.js';
import {
  DEFAULT_TUNING,
  clampPriority,
  emptyCounts,
  errorMessage,
  type ConsumeOptions,
  type Consumer,
  type JobQueue,
  type QueueCounts,
  type QueueEvent,
  type QueueJobSpec,
  type QueueTuning,
} from './queue.js';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS qjobs (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  lane TEXT NOT NULL,
  priority INTEGER NOT NULL,
  mem_bytes INTEGER NOT NULL,
  data TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('waiting', 'active', 'completed', 'failed')),
  run_at INTEGER NOT NULL,
  attempts INTEGER NOT NULL,
  backoff_ms INTEGER NOT NULL,
  attempts_made INTEGER NOT NULL DEFAULT 0,
  stalls INTEGER NOT NULL DEFAULT 0,
  owner TEXT,
  lock_until INTEGER,
  result TEXT,
  error TEXT,
  finished_at INTEGER
);
CREATE INDEX IF NOT EXISTS qjobs_ready ON qjobs (lane, state, priority DESC, seq);
CREATE INDEX IF NOT EXISTS qjobs_locks ON qjobs (state, lock_until) WHERE state = 'active';
CREATE TABLE IF NOT EXISTS qrate (lane TEXT PRIMARY KEY, window_start INTEGER NOT NULL, used INTEGER NOT NULL);`;

export interface EmbeddedQueueOptions {
  readonly path: string;
  readonly tuning?: QueueTuning;
  /** How often an idle consumer looks for new work added by other processes. */
  readonly pollMs?: number;
  readonly keepCompleted?: number;
}

const DECLINE_DELAY_MS = 250;

export type { Outcome, Row } from './embedded-consumer.js';

export class EmbeddedQueue implements JobQueue, ConsumerHost {
  readonly kind = 'embedded' as const;
  private readonly db: Database.Database;
  private readonly emitter = new EventEmitter();
  private readonly tuning: QueueTuning;
  private readonly consumers = new Set<EmbeddedConsumer>();
  private pending: Outcome[] = [];
  private flushScheduled = false;
  private closed = false;
  readonly pollMs: number;
  readonly keepCompleted: number;

  constructor(opts: EmbeddedQueueOptions) {
    try {
      mkdirSync(dirname(opts.path), { recursive: true });
      this.db = new Database(opts.path);
      this.db.pragma('journal_mode = WAL');
      this.db.pragma('synchronous = FULL');
      this.db.pragma('busy_timeout = 5000');
      this.db.exec(SCHEMA);
    } catch (e) {
      throw new TandemError('TANDEM_ERR_UNAVAILABLE', `queue database ${opts.path}: ${errorMessage(e)}`);
    }
    this.tuning = opts.tuning ?? DEFAULT_TUNING;
    this.pollMs = opts.pollMs ?? 20;
    this.keepCompleted = opts.keepCompleted ?? 1000;
    this.emitter.setMaxListeners(0);
  }

  add(jobs: readonly QueueJobSpec[]): Promise<void> {
    const ins = this.db.prepare(
      `INSERT INTO qjobs (id, lane, priority, mem_bytes, data, state, run_at, attempts, backoff_ms)
       VALUES (?, ?, ?, ?, ?, 'waiting', ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
    );
    const now = Date.now();
    this.db.transaction(() => {
      for (const j of jobs)
        ins.run(
          j.id,
          j.deviceClass,
          clampPriority(j.priority),
          j.memBytes,
          JSON.stringify(j.data),
          now,
          j.attempts ?? 3,
          j.backoffMs ?? 500,
        );
    })();
    for (const c of this.consumers) c.wake();
    return Promise.resolve();
  }

  consume(o: ConsumeOptions): Consumer {
    const c = new EmbeddedConsumer(this, o);
    this.consumers.add(c);
    c.start();
    return c;
  }

  /**
   * Takes up to n ready jobs of a lane for `owner` in one transaction (rate limit and fit applied).
   * `declined` is the consumer's own memory of jobs it could not hold (id → until when it skips them):
   * a decline hides the job from that consumer only, so another consumer that fits takes it on its next
   * poll. (A shared back-off in the row let the decliner win every race for the job when its poll timer
   * fell just before the other consumer's: a livelock seen once in CI.)
   */
  take(lane: string, n: number, owner: string, o: ConsumeOptions, declined: Map<string, number>): Row[] {
    const now = Date.now();
    for (const [id, until] of declined) if (until <= now) declined.delete(id);
    const skip = JSON.stringify([...declined.keys()]);
    return this.db.transaction((): Row[] => {
      let room = n;
      if (o.rateLimit) {
        const r = this.db.prepare('SELECT window_start, used FROM qrate WHERE lane = ?').get(lane) as
          { window_start: number; used: number } | undefined;
        const fresh = !r || now - r.window_start >= o.rateLimit.durationMs;
        const used = fresh ? 0 : r.used;
        room = Math.min(room, o.rateLimit.max - used);
        if (room <= 0) return [];
        if (fresh) this.db.prepare('INSERT OR REPLACE INTO qrate VALUES (?, ?, 0)').run(lane, now);
      }
      const rows = this.db
        .prepare(
          `SELECT id, lane, priority, mem_bytes, data, attempts_made FROM qjobs
           WHERE lane = ? AND state = 'waiting' AND run_at <= ?
             AND id NOT IN (SELECT value FROM json_each(?))
           ORDER BY priority DESC, seq LIMIT ?`,
        )
        .all(lane, now, skip, room * 2) as Row[];
      const taken: Row[] = [];
      const lock = this.db.prepare(
        `UPDATE qjobs SET state = 'active', owner = ?, lock_until = ? WHERE id = ? AND state = 'waiting'`,
      );
      for (const r of rows) {
        if (taken.length >= room) break;
        if (o.fits && !o.fits({ id: r.id, deviceClass: r.lane, memBytes: r.mem_bytes })) {
          declined.set(r.id, now + DECLINE_DELAY_MS);
          continue;
        }
        lock.run(owner, now + this.tuning.lockMs, r.id);
        taken.push(r);
      }
      if (o.rateLimit && taken.length > 0)
        this.db.prepare('UPDATE qrate SET used = used + ? WHERE lane = ?').run(taken.length, lane);
      return taken;
    })();
  }

  renew(owner: string): void {
    this.db
      .prepare(`UPDATE qjobs SET lock_until = ? WHERE owner = ? AND state = 'active'`)
      .run(Date.now() + this.tuning.lockMs, owner);
  }

  /** Jobs whose lease lapsed go back to waiting (or fail after maxStalls); returns their ids. */
  recoverStalled(): string[] {
    const now = Date.now();
    const ids = this.db.transaction((): string[] => {
      const rows = this.db
        .prepare(`SELECT id, stalls FROM qjobs WHERE state = 'active' AND lock_until < ?`)
        .all(now) as { id: string; stalls: number }[];
      const back = this.db.prepare(
        `UPDATE qjobs SET state = 'waiting', owner = NULL, stalls = stalls + 1, run_at = ? WHERE id = ?`,
      );
      const fail = this.db.prepare(
        `UPDATE qjobs SET state = 'failed', owner = NULL, error = 'stalled too many times', finished_at = ? WHERE id = ?`,
      );
      for (const r of rows) (r.stalls + 1 > this.tuning.maxStalls ? fail : back).run(now, r.id);
      return rows.map((r) => r.id);
    })();
    for (const id of ids) this.emit({ type: 'stalled', id });
    if (ids.length > 0) for (const c of this.consumers) c.wake();
    return ids;
  }

  /** Queues an outcome for the next group commit; resolves once it is durable. */
  settle(o: Outcome): void {
    this.pending.push(o);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.flushScheduled = false;
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0 || this.closed) return;
    const now = Date.now();
    const events: QueueEvent[] = [];
    const done = this.db.prepare(
      `UPDATE qjobs SET state = 'completed', owner = NULL, result = ?, finished_at = ?
       WHERE id = ? AND owner = ? AND state = 'active'`,
    );
    const get = this.db.prepare('SELECT attempts, attempts_made, backoff_ms FROM qjobs WHERE id = ?');
    const retry = this.db.prepare(
      `UPDATE qjobs SET state = 'waiting', owner = NULL, attempts_made = attempts_made + 1, run_at = ?, error = ?
       WHERE id = ? AND owner = ? AND state = 'active'`,
    );
    const fail = this.db.prepare(
      `UPDATE qjobs SET state = 'failed', owner = NULL, attempts_made = attempts_made + 1, error = ?, finished_at = ?
       WHERE id = ? AND owner = ? AND state = 'active'`,
    );
    this.db.transaction(() => {
      for (const o of batch) {
        if (o.kind === 'done') {
          // changes 0: the lease lapsed and someone else owns the job now (the queue is at-least-once).
          if (done.run(JSON.stringify(o.result ?? null), now, o.id, o.owner).changes === 1)
            events.push({ type: 'completed', id: o.id, result: o.result ?? null });
          continue;
        }
        const r = get.get(o.id) as
          { attempts: number; attempts_made: number; backoff_ms: number } | undefined;
        if (!r) continue;
        const made = r.attempts_made + 1;
        const again = o.retry && made < r.attempts;
        const changed = again
          ? retry.run(now + r.backoff_ms * 2 ** (made - 1), o.error, o.id, o.owner).changes
          : fail.run(o.error, now, o.id, o.owner).changes;
        if (changed === 1)
          events.push({ type: 'failed', id: o.id, error: o.error, attemptsMade: made, final: !again });
      }
    })();
    for (const e of events) this.emit(e);
    if (events.some((e) => e.type === 'failed')) for (const c of this.consumers) c.wake();
  }

  /** Drops completed rows beyond the retention count (the store keeps every job). */
  trim(): void {
    this.db
      .prepare(
        `DELETE FROM qjobs WHERE state = 'completed' AND seq <= (
           SELECT seq FROM qjobs WHERE state = 'completed' ORDER BY seq DESC LIMIT 1 OFFSET ?)`,
      )
      .run(this.keepCompleted);
  }

  /** Puts the owner's still-active jobs back (a consumer closing without finishing them). */
  release(owner: string): void {
    if (this.closed) return;
    this.flush();
    this.db
      .prepare(`UPDATE qjobs SET state = 'waiting', owner = NULL WHERE owner = ? AND state = 'active'`)
      .run(owner);
  }

  async counts(deviceClasses?: readonly string[]): Promise<Record<string, QueueCounts>> {
    const now = Date.now();
    const rows = this.db
      .prepare(
        `SELECT lane, state, run_at > ? AS later, COUNT(*) AS n FROM qjobs GROUP BY lane, state, later`,
      )
      .all(now) as { lane: string; state: string; later: number; n: number }[];
    const out: Record<string, QueueCounts> = {};
    for (const l of deviceClasses ?? []) out[l] = emptyCounts();
    for (const r of rows) {
      if (deviceClasses && !deviceClasses.includes(r.lane)) continue;
      const c = (out[r.lane] ??= emptyCounts());
      if (r.state === 'waiting') c[r.later ? 'delayed' : 'waiting'] += r.n;
      else c[r.state as 'active' | 'completed' | 'failed'] += r.n;
    }
    return Promise.resolve(out);
  }

  cancel(id: string, deviceClass: string): Promise<boolean> {
    const n = this.db
      .prepare(`DELETE FROM qjobs WHERE id = ? AND lane = ? AND state = 'waiting'`)
      .run(id, deviceClass).changes;
    return Promise.resolve(n === 1);
  }

  on(listener: (e: QueueEvent) => void): () => void {
    this.emitter.on('event', listener);
    return () => this.emitter.off('event', listener);
  }

  emit(e: QueueEvent): void {
    this.emitter.emit('event', e);
  }

  forget(c: EmbeddedConsumer): void {
    this.consumers.delete(c);
  }

  get lockMs(): number {
    return this.tuning.lockMs;
  }

  get stalledCheckMs(): number {
    return this.tuning.stalledCheckMs;
  }

  async close(): Promise<void> {
    await Promise.all([...this.consumers].map((c) => c.close(1000)));
    this.flush();
    this.closed = true;
    this.db.close();
  }
}
