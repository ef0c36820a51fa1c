/**
 * The single node's load shedder (runner/load-shedder.ts) fed from the whole cluster. On one node the
 * shedder reads the dispatcher's queue from memory; scaled out, the queue is every control-plane
 * replica's submissions, drained by every agent, and only PostgreSQL sees all of it. So this polls the
 * store (every POLL_MS: queued jobs per tenant, jobs finished since the last poll, both on partial
 * indexes) and answers the shedder's QueueSignals from the last poll plus what this replica has
 * submitted since (a burst between two polls is counted at once, not 100 ms late). A submission made
 * while a poll runs may already be in that poll's snapshot: the poll also reads the highest job seq the
 * snapshot saw, and this replica's submissions at or below it are not counted again (counted twice, a
 * tenant's own burst was refused below its share: 33 accepted of a budget of 40 on a busy box). Other
 * replicas' submissions are seen at the next poll: with R replicas the queue can overshoot its budget by
 * at most what R−1 replicas accept in one poll period.
 *
 * Finishes are counted in a window that lags the clock by FINISH_LAG_MS: an agent stamps finished_at
 * before its commit is visible, so a window read right up to now would miss the commits still in flight.
 */
import type { QueueSignals } from '../runner/load-shedder.js';

/** The two questions the shedder's signals ask of the job store. */
export interface ClusterLoadSource {
  /**
   * Queued jobs per tenant (tenants with none are absent), and the highest job seq in the same snapshot
   * (0 when there is no job).
   */
  queuedByTenant(): Promise<{ queued: Map<string, number>; maxSeq: number }>;
  /** Jobs that reached a final state with finished_at in [fromMs, toMs). */
  finishedBetween(fromMs: number, toMs: number): Promise<number>;
}

/** Something that runs SQL (PgJobStore.query). */
interface Sql {
  query<R extends object>(sql: string, args?: unknown[]): Promise<{ rows: R[] }>;
}

export function pgClusterLoadSource(db: Sql): ClusterLoadSource {
  return {
    async queuedByTenant() {
      // One statement, so one snapshot: the counts and the highest seq it saw.
      const r = await db.query<{ max_seq: string; queued: Record<string, number> | null }>(
        `SELECT COALESCE(MAX(seq), 0)::text AS max_seq,
           (SELECT json_object_agg(tenant_id, n) FROM
             (SELECT tenant_id, COUNT(*)::int AS n FROM tandem_jobs WHERE state = 'queued'
              GROUP BY tenant_id) q
           ) AS queued
         FROM tandem_jobs`,
      );
      const row = r.rows[0];
      return {
        queued: new Map(Object.entries(row?.queued ?? {})),
        maxSeq: Number(row?.max_seq ?? 0),
      };
    },
    async finishedBetween(fromMs, toMs) {
      const r = await db.query<{ n: number }>(
        `SELECT COUNT(*)::int AS n FROM tandem_jobs WHERE finished_at >= $1 AND finished_at < $2`,
        [fromMs, toMs],
      );
      return r.rows[0]?.n ?? 0;
    },
  };
}

/**
 * How a submit path tells the backlog about a submission: call at its start, then `done(created, seq)`
 * with the stored job's seq (unknown: it is counted until the next poll has surely seen it).
 */
export interface SubmitTracker {
  submitting(tenantId: string): (created: boolean, seq?: number) => void;
}

export const POLL_MS = 100;
export const FINISH_LAG_MS = 500;

const add = (m: Map<string, number>, k: string, n: number): void => {
  const v = (m.get(k) ?? 0) + n;
  if (v > 0) m.set(k, v);
  else m.delete(k);
};

export class ClusterBacklog implements QueueSignals, SubmitTracker {
  private polled = new Map<string, number>();
  private polledTotal = 0;
  /** Created by this replica since the running (or last) poll began. */
  private since = new Map<string, number>();
  /** The same, with their seqs: those the running poll's snapshot saw are dropped when it ends. */
  private sinceSeqs: { tenantId: string; seq: number }[] = [];
  /** Created by this replica before the running poll began (it may or may not count them). */
  private inPoll = new Map<string, number>();
  private readonly inserting = new Map<string, number>();
  private insertingTotal = 0;
  private finishedUpTo: number;
  private timer: NodeJS.Timeout | null = null;
  private polling = false;
  /** Polls that failed in a row (the store is away): the signals keep their last values meanwhile. */
  failures = 0;

  constructor(
    private readonly src: ClusterLoadSource,
    private readonly weights: (tenantId: string) => number,
    private readonly onFinished: (count: number) => void,
    private readonly now: () => number = Date.now,
  ) {
    this.finishedUpTo = now() - FINISH_LAG_MS;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.poll(), POLL_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** One poll (the timer's; tests call it to read the store at once). */
  async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    for (const [k, n] of this.since) add(this.inPoll, k, n);
    this.since = new Map();
    this.sinceSeqs = [];
    try {
      const to = this.now() - FINISH_LAG_MS;
      const [{ queued, maxSeq }, finished] = await Promise.all([
        this.src.queuedByTenant(),
        to > this.finishedUpTo ? this.src.finishedBetween(this.finishedUpTo, to) : Promise.resolve(0),
      ]);
      this.finishedUpTo = Math.max(this.finishedUpTo, to);
      this.polled = queued;
      this.polledTotal = 0;
      for (const n of queued.values()) this.polledTotal += n;
      this.inPoll = new Map();
      // Made while the poll ran: those its snapshot already counted are not counted again.
      const unseen = this.sinceSeqs.filter((e) => e.seq > maxSeq);
      if (unseen.length < this.sinceSeqs.length) {
        this.sinceSeqs = unseen;
        this.since = new Map();
        for (const e of unseen) add(this.since, e.tenantId, 1);
      }
      this.failures = 0;
      if (finished > 0) this.onFinished(finished);
    } catch {
      // The store is away: keep counting this replica's submissions on top of the last poll.
      this.failures++;
      for (const [k, n] of this.inPoll) {
        add(this.since, k, n);
        for (let i = 0; i < n; i++) this.sinceSeqs.push({ tenantId: k, seq: Infinity });
      }
      this.inPoll = new Map();
    } finally {
      this.polling = false;
    }
  }

  submitting(tenantId: string): (created: boolean, seq?: number) => void {
    add(this.inserting, tenantId, 1);
    this.insertingTotal++;
    let settled = false;
    return (created, seq) => {
      if (settled) return;
      settled = true;
      add(this.inserting, tenantId, -1);
      this.insertingTotal--;
      if (!created) return;
      add(this.since, tenantId, 1);
      this.sinceSeqs.push({ tenantId, seq: seq ?? Infinity });
    };
  }

  private local(tenantId: string): number {
    return (this.since.get(tenantId) ?? 0) + (this.inPoll.get(tenantId) ?? 0);
  }

  backlog(): number {
    let local = 0;
    for (const n of this.since.values()) local += n;
    for (const n of this.inPoll.values()) local += n;
    return this.polledTotal + local + this.insertingTotal;
  }

  backlogFor(tenantId: string): number {
    return (this.polled.get(tenantId) ?? 0) + this.local(tenantId) + (this.inserting.get(tenantId) ?? 0);
  }

  pendingCommit(): number {
    return this.insertingTotal;
  }

  *activeTenants(): Iterable<string> {
    const seen = new Set<string>();
    for (const m of [this.polled, this.since, this.inPoll, this.inserting])
      for (const k of m.keys())
        if (!seen.has(k)) {
          seen.add(k);
          yield k;
        }
  }

  weightOf(tenantId: string): number {
    return this.weights(tenantId);
  }
}
