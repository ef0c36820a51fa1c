/**
 * A job's deadline on an agent, the single node's rule (runner/deadlines.ts, dispatcher.ts) on one
 * attempt: at the deadline the job's signal aborts with TANDEM_ERR_DEADLINE_EXCEEDED and the job stops at
 * its next cancellation point and fails with that code; one still running `graceMs` later is failed
 * anyway and its slot given back (`overdue` settles), its late outcome dropped. The deadline itself was
 * set by the store at the job's first start (PgJobStore.startAttempt) and is kept by re-runs on other
 * agents, so a job that hung or lost its agent is not handed a fresh budget each time it comes back.
 */
import type { TandemError } from '../core/errors.js';
import { deadlineExceeded } from '../service/runner/deadlines.js';
import type { JobRecord } from '../service/store/job-store.js';
import type { FinishOutcome } from '../service/store/job-store.js';

type DeadlineJob = Pick<JobRecord, 'timeoutMs' | 'deadlineAt' | 'startedAt'>;

export class AttemptDeadline {
  /** Set when the deadline passed: why the job was asked to stop. */
  reason: TandemError | null = null;
  /** Settles with the failure to commit if the job is still running `graceMs` after its deadline. */
  readonly overdue: Promise<FinishOutcome>;
  private readonly timers: NodeJS.Timeout[] = [];

  constructor(job: DeadlineJob, stop: AbortController, graceMs: number, now = Date.now()) {
    const at = job.deadlineAt;
    if (at == null) {
      this.overdue = new Promise<FinishOutcome>(() => undefined); // no budget (a job from before deadlines)
      return;
    }
    this.timers.push(
      setTimeout(
        () => {
          this.reason = deadlineExceeded(job, Date.now());
          stop.abort(this.reason);
        },
        Math.max(0, at - now),
      ),
    );
    this.overdue = new Promise<FinishOutcome>((resolve) => {
      this.timers.push(
        setTimeout(
          () => {
            const note = `it did not stop within ${graceMs} ms of its deadline; its slot was freed`;
            resolve({ state: 'failed', error: deadlineExceeded(job, Date.now(), note).toJSON() });
          },
          Math.max(0, at + graceMs - now),
        ),
      );
    });
  }

  /** The job ended (or was given up): no more timers. */
  clear(): void {
    for (const t of this.timers) clearTimeout(t);
  }
}

/** A job whose time ran out before this attempt started (it ran past it on an agent that died). */
export function expiredAtStart(job: DeadlineJob, now = Date.now()): FinishOutcome | null {
  if (job.deadlineAt == null || job.deadlineAt > now) return null;
  const note = 'its time ran out before this attempt started';
  return { state: 'failed', error: deadlineExceeded(job, now, note).toJSON() };
}
