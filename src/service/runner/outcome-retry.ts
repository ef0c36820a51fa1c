/**
 * Finished jobs whose outcome commit failed (a full disk, an I/O error). Before, the failure was only
 * logged and the job stayed `running` in the database, with no worker, until a restart. Here each one
 * is retried with exponential backoff, so it lands as soon as the disk has room again; after `giveUpMs`
 * of failures each retry also offers a smaller fallback (the job failed with TANDEM_ERR_UNAVAILABLE,
 * no result), which lands when only the full outcome does not fit (a result file too large for the
 * space left). Nothing is dropped while the process lives; a restart re-queues what is still pending
 * (it is `running` in the database), as for any running job.
 */
import { TandemError } from '../../core/errors.js';
import type { FinishOutcome } from '../store/job-store.js';
import type { StoreHealth } from '../store/store-health.js';

/** The fallback outcome: the job failed because what it ended with could not be stored. */
export function unstoredOutcome(state: FinishOutcome['state'], why: string): FinishOutcome {
  return {
    state: 'failed',
    error: new TandemError(
      'TANDEM_ERR_UNAVAILABLE',
      `the job ended (${state}) but its outcome could not be stored: ${why}`,
      { outcome: state },
    ).toJSON(),
  };
}

export interface OutcomeRetryOptions {
  readonly health: StoreHealth;
  /** How long the full outcome is retried alone before the fallback is offered too. */
  readonly giveUpMs: number;
  readonly firstDelayMs?: number;
  readonly maxDelayMs?: number;
  readonly log: (level: 'warn' | 'error', msg: string) => void;
}

export interface OutcomeCommits {
  /** Commits the outcome as it is; throws when the store refuses the write. */
  readonly full: () => void;
  /** Commits the job as failed with `why`; throws likewise. */
  readonly fallback: (why: string) => void;
  /** Called once one of them has landed. */
  readonly landed: () => void;
}

interface Pending extends OutcomeCommits {
  readonly jobId: string;
  readonly since: number;
  delayMs: number;
  timer: NodeJS.Timeout | null;
  lastError: string;
}

export class OutcomeRetry {
  private readonly pending = new Map<string, Pending>();
  private closed = false;

  constructor(private readonly o: OutcomeRetryOptions) {
    o.health.pendingOutcomes = () => this.pending.size;
  }

  get size(): number {
    return this.pending.size;
  }

  /**
   * Commits the outcome (`full`) now; when the store refuses it, retries it until it lands (then calls
   * `landed`). True when it is waiting for a retry.
   */
  commit(jobId: string, commits: OutcomeCommits): boolean {
    try {
      commits.full();
      return false;
    } catch (e) {
      this.o.log('error', `committing job ${jobId}: ${message(e)} (retrying)`);
      this.add(jobId, e, commits);
      return !this.closed;
    }
  }

  /** The outcome of `jobId` could not be committed (`error`): retry it until it lands. */
  add(jobId: string, error: unknown, commits: OutcomeCommits): void {
    if (this.closed) return;
    this.o.health.failed(`committing job ${jobId}`, error);
    const p: Pending = {
      ...commits,
      jobId,
      since: Date.now(),
      delayMs: this.o.firstDelayMs ?? 25,
      timer: null,
      lastError: message(error),
    };
    this.pending.set(jobId, p);
    this.schedule(p);
  }

  private schedule(p: Pending): void {
    p.timer = setTimeout(() => this.attempt(p), p.delayMs);
    p.timer.unref();
  }

  private attempt(p: Pending): void {
    p.timer = null;
    if (this.closed) return;
    try {
      p.full();
      this.landed(p, 'its outcome');
      return;
    } catch (e) {
      p.lastError = message(e);
      this.o.health.failed(`committing job ${p.jobId}`, e);
    }
    if (Date.now() - p.since >= this.o.giveUpMs) {
      try {
        p.fallback(p.lastError);
        this.landed(p, 'a failure (its outcome did not fit)');
        return;
      } catch (e) {
        this.o.health.failed(`committing job ${p.jobId} as failed`, e);
      }
    }
    p.delayMs = Math.min(2 * p.delayMs, this.o.maxDelayMs ?? 2000);
    this.schedule(p);
  }

  private landed(p: Pending, what: string): void {
    this.pending.delete(p.jobId);
    this.o.health.succeeded();
    this.o.log('warn', `job ${p.jobId}: ${what} committed after ${Date.now() - p.since} ms of store errors`);
    p.landed();
  }

  /** Stops retrying (shutdown): what is pending stays `running` in the database for the next start. */
  close(): void {
    this.closed = true;
    for (const p of this.pending.values()) if (p.timer) clearTimeout(p.timer);
    this.pending.clear();
  }
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
