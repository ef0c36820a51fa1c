/**
 * The control plane's singleton work, done by whichever replica holds the leader lock (leader-lock.ts):
 *   - the reconciler: re-places held jobs, re-adds queued ones the queue may have lost (Redis outage, a
 *     submit that died between its two writes);
 *   - the cancels of running jobs whose agent has died (no agent will read them);
 *   - the deadline backstop: a running job still not final DEADLINE_BACKSTOP_MS after its deadline and
 *     the agent's grace has no agent that will end it (its agent died, or hangs while its heartbeat
 *     lives, and the queue lost the job), so it is failed here with TANDEM_ERR_DEADLINE_EXCEEDED. An agent
 *     alive ends its own jobs at the deadline (agent-deadline.ts); this only keeps anything from staying
 *     `running` with no worker.
 * Every action is a fenced store transition or a deduplicated queue add, so a second leader for a moment
 * (see leader-lock.ts) does no harm.
 */
import { deadlineExceeded } from '../runner/deadlines.js';
import { HELD_PREFIX, type JobStoreApi } from '../store/store.js';
import type { SingletonLock } from './leader-lock.js';
import { placeJobs, releaseHeld, type PlaceDeps } from './placement.js';

/** Past a job's deadline and the agents' grace, how long the leader leaves the job to its agent. */
export const DEADLINE_BACKSTOP_MS = 5000;
/** How often the leader lock is asked for (or confirmed) and the deadline backstop runs. */
const TICK_MS = 1000;

export interface LeaderDutiesDeps {
  readonly store: JobStoreApi;
  placeDeps(): Promise<PlaceDeps>;
  readonly reconcileMs: number;
  /** The agents' grace after a deadline (TANDEM_DEADLINE_GRACE_MS). */
  readonly deadlineGraceMs: number;
  /** null: this process is the only control plane (always the leader). */
  readonly lock: SingletonLock | null;
}

export class LeaderDuties {
  private timer: NodeJS.Timeout | null = null;
  private busy = false;
  /** The first pass comes one period after the start (the replicas already running did the last). */
  private lastReconcile = Date.now();
  /** Jobs failed by the deadline backstop (tests and /healthz). */
  overdueFailed = 0;

  constructor(private readonly d: LeaderDutiesDeps) {}

  get leader(): boolean {
    return this.d.lock === null || this.d.lock.held;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.tick(), Math.min(TICK_MS, this.d.reconcileMs));
    this.timer.unref();
    void this.tick();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.d.lock?.release();
  }

  /** One pass: take (or confirm) the lock; as the leader, the backstop, and the reconciler when due. */
  async tick(now = Date.now()): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      if (this.d.lock && !(await this.d.lock.acquire())) return;
      await this.failOverdue(now);
      if (now - this.lastReconcile >= this.d.reconcileMs) {
        this.lastReconcile = now;
        await this.reconcile();
      }
    } catch {
      // Redis or PostgreSQL away: the next tick tries again
    } finally {
      this.busy = false;
    }
  }

  private async failOverdue(now: number): Promise<void> {
    const cutoff = now - this.d.deadlineGraceMs - DEADLINE_BACKSTOP_MS;
    for (const j of await this.d.store.overdue(cutoff, 100)) {
      const note = `no agent ended it within ${this.d.deadlineGraceMs + DEADLINE_BACKSTOP_MS} ms of its deadline; failed by the control plane`;
      const failed = await this.d.store.finish(j.id, j.attempt, {
        state: 'failed',
        error: deadlineExceeded(j, now, note).toJSON(),
      });
      if (failed) this.overdueFailed++;
    }
  }

  private async reconcile(): Promise<void> {
    const d = await this.d.placeDeps();
    await releaseHeld(d);
    const cutoff = Date.now() - this.d.reconcileMs;
    const queued = await this.d.store.list({ tenantId: null, state: 'queued', limit: 1000 });
    const stale = queued.filter((j) => j.createdAt < cutoff && !j.message.startsWith(HELD_PREFIX));
    if (stale.length > 0) await placeJobs(stale, d);
    await this.cancelOrphans(d);
  }

  /**
   * A cancel asked of a running job whose agent has died since: no agent will read it, and a
   * re-delivery skips a job with a cancel requested, so the leader commits the cancel.
   */
  private async cancelOrphans(d: PlaceDeps): Promise<void> {
    const { store } = this.d;
    const live = new Set(d.agents.map((a) => a.name));
    const running = await store.list({ tenantId: null, state: 'running', limit: 1000 });
    for (const j of running.filter((x) => x.cancelRequested)) {
      const last = (await store.attempts(j.id)).at(-1);
      if (!last || live.has(last.agent)) continue;
      await store.finish(j.id, j.attempt, {
        state: 'cancelled',
        error: {
          code: 'TANDEM_ERR_CANCELLED',
          message: `cancelled (its agent ${last.agent} is gone)`,
          details: { agent: last.agent },
        },
      });
    }
  }
}
