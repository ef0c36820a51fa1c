/**
 * The job store's health as `/healthz` shows it: `ok`, or `degraded` while writes fail (a full disk,
 * an I/O error) or finished jobs' outcomes wait to be committed. The writers report each failure and
 * each success; nothing here touches the database.
 */

export interface StoreHealthView {
  readonly state: 'ok' | 'degraded';
  /** Outcomes of finished jobs not committed yet (retried; see runner/outcome-retry.ts). */
  readonly pendingOutcomes: number;
  /** The last write that failed, and when (ISO time); kept after recovery. */
  readonly lastError: string | null;
  readonly lastErrorAt: string | null;
}

export class StoreHealth {
  private lastError: string | null = null;
  private lastErrorAt: number | null = null;
  /** The most recent write failed (cleared by the next one that succeeds). */
  private failing = false;
  /** Set by the outcome retrier. */
  pendingOutcomes: () => number = () => 0;

  /** A write failed: `what` says which ("committing job …", "claiming a job", "storing submissions"). */
  failed(what: string, e: unknown, now = Date.now()): void {
    this.failing = true;
    this.lastError = `${what}: ${e instanceof Error ? e.message : String(e)}`;
    this.lastErrorAt = now;
  }

  /** A write succeeded. */
  succeeded(): void {
    this.failing = false;
  }

  get degraded(): boolean {
    return this.failing || this.pendingOutcomes() > 0;
  }

  view(): StoreHealthView {
    return {
      state: this.degraded ? 'degraded' : 'ok',
      pendingOutcomes: this.pendingOutcomes(),
      lastError: this.lastError,
      lastErrorAt: this.lastErrorAt === null ? null : new Date(this.lastErrorAt).toISOString(),
    };
  }
}
