/**
 * Starting jobs: which queued jobs fit (global slots, tenant quotas, device memory, fairness), their
 * placement and deadline, their claims as rows of the dispatcher's turn commit (turn-commit.ts), and
 * their runs once a claim is committed. Also the shortcut that starts a job in its insert's own
 * transaction when nothing is queued ahead of it.
 */
import { asTandemError, TandemError } from '../../core/errors.js';
import type { AnyJobType, Placement } from '../jobs/job-type.js';
import type { JobEvents } from '../obs/job-trace.js';
import type { FinishOutcome, InsertClaim, JobRecord, NewJob } from '../store/job-store.js';
import type { Admission, Footprint } from './admission.js';
import { deadlineExceeded, deadlineIfStartedAt } from './deadlines.js';
import type { DispatcherDeps } from './dispatcher-deps.js';
import type { FairQueue, QueuedJob } from './fair-queue.js';
import { selectPlacement } from './hardware-rules.js';
import type { PendingFinish } from './job-finish.js';
import { newRunningJob, runJob, stopJob, type RunningJob } from './job-run.js';
import type { StartAtInsert } from './submitter.js';
import type { TurnCommit, TurnRow } from './turn-commit.js';

/** What starting needs from the dispatcher around it. */
export interface StartHooks {
  scheduleTurn(): void;
  /** A job failed before it could run (fenced by its claim): its failure goes to the next turn. */
  finishLater(p: PendingFinish): void;
  /** A run returned with its outcome. */
  ended(r: RunningJob, outcome: FinishOutcome, ev: JobEvents): void;
  stopping(): boolean;
  paused(): boolean;
}

/** Room held for a job that is being inserted already running. */
interface Reservation extends Footprint {
  readonly type: AnyJobType;
  readonly params: unknown;
  readonly placement: Placement;
  readonly deadlineAt: number;
}

/** One turn's claims: how many landed, and why one was refused (null: none was). */
export interface ClaimTally {
  landed: number;
  refused: unknown;
}

/** How a queued job starts, decided before its claim is written. */
interface Plan {
  readonly type: AnyJobType;
  readonly params: unknown;
  readonly placement: Placement;
  readonly deadlineAt: number;
}

export class Starts {
  /** After a claim the store refused: claims wait this long before trying again (backoff). */
  private claimBackoffMs = 0;
  private claimsPausedUntil = 0;
  /**
   * Jobs claimed whose turn is not durable yet (they run once it is): a cancel meanwhile is kept here
   * and given to the run when it starts.
   */
  private readonly claimedNotStarted = new Map<string, { cancel: boolean }>();

  constructor(
    private readonly d: DispatcherDeps,
    private readonly queue: FairQueue,
    private readonly admitted: Admission,
    private readonly running: Map<string, RunningJob>,
    private readonly hooks: StartHooks,
  ) {}

  /** Jobs claimed whose run waits for their turn to be durable (running, as the database says). */
  get startingCount(): number {
    return this.claimedNotStarted.size;
  }

  /** Whether a turn with no outcomes to commit could claim a job now. */
  mayClaim(): boolean {
    return this.claimsOpen() && this.admitted.hasSlot();
  }

  private claimsOpen(): boolean {
    return (
      this.queue.size > 0 &&
      !this.hooks.stopping() &&
      !this.hooks.paused() &&
      Date.now() >= this.claimsPausedUntil
    );
  }

  private totalDeviceMemory(): number {
    return this.d.devices().reduce((s, dv) => s + dv.memoryBytes, 0);
  }

  /** Inside a turn: claims the queued jobs that fit, in fair order, each as a row of the turn. */
  claimInto(t: TurnCommit, tally: ClaimTally): void {
    if (!this.claimsOpen()) return; // nothing to place: no device snapshot
    const total = this.totalDeviceMemory();
    const a = this.admitted;
    while (a.hasSlot() && this.queue.size > 0) {
      const fair = this.queue.peekFair();
      // Reserve memory for the fairly-next job instead of letting smaller ones overtake it forever.
      if (fair && a.tenantRoom(fair) && !a.fits(fair, total)) return;
      const next = this.queue.next((j) => a.tenantRoom(j) && a.fits(j, total));
      if (!next) return;
      const row = this.claimRow(next, tally);
      // A claim the store refuses fails alone: the job is re-queued after the commit (not picked again
      // in this turn, and its room is held until then, so a turn writes at most a slot's worth).
      if (row) t.write(row);
    }
  }

  /**
   * After a turn's commit: claims back off only when the store refused them all (disk full); a claim
   * that failed alone next to others that landed does not hold everyone behind it.
   */
  afterTurn({ landed, refused: error }: ClaimTally): void {
    if (error === null) {
      if (landed > 0 && this.claimBackoffMs > 0) this.d.health.succeeded();
      if (landed > 0) this.claimBackoffMs = 0;
      return;
    }
    this.d.health.failed('claiming a job', error);
    if (landed > 0) return;
    this.claimBackoffMs = Math.min(2000, Math.max(25, 2 * this.claimBackoffMs));
    this.claimsPausedUntil = Date.now() + this.claimBackoffMs;
    // The timer ends the pause itself: it may fire a millisecond before Date.now() reaches the mark,
    // and a turn that found claims still paused would schedule no other.
    setTimeout(() => {
      this.claimsPausedUntil = 0;
      this.hooks.scheduleTurn();
    }, this.claimBackoffMs).unref();
  }

  /**
   * The claim of one queued job. A job that cannot even be placed, or whose time ran out in an earlier
   * process, is claimed too (so its failure is fenced by the attempt) and failed without running.
   */
  private claimRow(q: QueuedJob, tally: ClaimTally): TurnRow | null {
    // A job queued by this process carries its record; one loaded at restart is read here.
    const record = q.record ?? this.d.store.get(q.id);
    if (!record || record.state !== 'queued') return null;
    const now = Date.now();
    let plan: Plan | null = null;
    let placeError: unknown = null;
    try {
      const type = this.d.registry.get(record.type);
      const params = type.parse(record.params);
      const device = type.requestedDevice?.(params);
      const placement = selectPlacement(
        this.d.config.hardwareRules,
        record.jobClass,
        device,
        this.d.devices(),
      );
      const deadlineAt = deadlineIfStartedAt(record, type, this.d.config.defaultJobTimeoutSeconds, now);
      plan = { type, params, placement, deadlineAt };
    } catch (e) {
      placeError = e;
    }
    if (plan) this.admitted.admit(record); // its room, for the rest of this turn's claims
    let claimed: JobRecord | null = null;
    const giveBack = (): void => {
      if (plan) this.admitted.release(record);
    };
    return {
      write: () => {
        const device = plan ? (plan.placement.device ?? 'auto') : null;
        const reason = plan?.placement.reason ?? null;
        claimed = this.d.store.claim(q.id, device, reason, now, record, plan?.deadlineAt ?? null);
        if (claimed && plan) this.claimedNotStarted.set(q.id, { cancel: false });
      },
      committed: (error) => {
        const cancel = this.claimedNotStarted.get(q.id)?.cancel ?? false;
        this.claimedNotStarted.delete(q.id);
        if (error !== null) return this.refused(q, error, giveBack, tally);
        tally.landed++;
        if (!claimed) return giveBack(); // no longer queued (cancelled meanwhile)
        // Stopping: it stays `running` in the database, and the next start re-queues it.
        if (this.hooks.stopping()) return giveBack();
        if (!plan) {
          const err = asTandemError(placeError, 'TANDEM_ERR_INTERNAL', 'placing the job');
          this.failUnrun(claimed, err.toJSON());
        } else if (claimed.deadlineAt != null && claimed.deadlineAt <= now) {
          // Its budget ran out in an earlier process (a restart re-queued it): it fails without running.
          giveBack();
          const why = 'its time ran out before this start (re-queued by a restart)';
          this.failUnrun(claimed, deadlineExceeded(claimed, now, why).toJSON());
        } else {
          const r = this.run(claimed, plan.type, plan.params, plan.placement);
          if (cancel) {
            r.cancelRequested = true;
            stopJob(r, new TandemError('TANDEM_ERR_CANCELLED', 'cancelled while running'));
          }
        }
      },
      lost: (error) => {
        this.claimedNotStarted.delete(q.id);
        this.refused(q, error, giveBack, tally);
      },
    };
  }

  /**
   * A cancel of a job whose claim is committed but whose run waits for the turn to be durable: true
   * when it is such a job (its run starts cancelled).
   */
  cancelBeforeRun(jobId: string): boolean {
    const pending = this.claimedNotStarted.get(jobId);
    if (pending) pending.cancel = true;
    return pending !== undefined;
  }

  private failUnrun(job: JobRecord, error: NonNullable<FinishOutcome['error']>): void {
    this.hooks.finishLater({ job, outcome: { state: 'failed', error }, ev: undefined, holdsRoom: false });
  }

  /** The store refused a claim: the job stays queued, here and in the database. */
  private refused(q: QueuedJob, error: unknown, giveBack: () => void, tally: ClaimTally): void {
    giveBack();
    this.queue.push(q);
    tally.refused = error;
  }

  /**
   * Starting `job` in its insert's own transaction, which then commits its claim too (one commit and
   * one event-loop turn less than queue → turn → claim). At the group commit, `reserve` takes room
   * only when nothing is queued (fairness has nobody to prefer it to), a slot, the tenant's quotas and
   * device memory allow, and the job can be placed; else the job is queued as usual.
   */
  atInsert(job: NewJob, parsed: unknown): StartAtInsert {
    let held: Reservation | null = null;
    return {
      reserve: (): InsertClaim | null => {
        held = this.reserve(job, parsed);
        return (
          held && {
            device: held.placement.device ?? 'auto',
            placement: held.placement.reason,
            deadlineAt: held.deadlineAt,
          }
        );
      },
      started: (record) => {
        // Stopping (its group became durable after the stop began): the next start re-queues it.
        if (held && this.hooks.stopping()) this.admitted.release(held);
        else if (held) this.run(record, held.type, held.params, held.placement);
        held = null;
      },
      unreserve: () => {
        if (held) this.admitted.release(held);
        held = null;
        this.hooks.scheduleTurn();
      },
    };
  }

  private reserve(job: NewJob, parsed: unknown): Reservation | null {
    const a = this.admitted;
    if (this.hooks.paused() || this.hooks.stopping() || this.queue.size > 0 || !a.hasSlot()) return null;
    if (!a.tenantRoom(job) || (a.size > 0 && !a.fits(job, this.totalDeviceMemory()))) return null;
    try {
      const type = this.d.registry.get(job.type);
      const params = parsed === undefined ? type.parse(job.params) : parsed;
      const device = type.requestedDevice?.(params);
      const placement = selectPlacement(this.d.config.hardwareRules, job.jobClass, device, this.d.devices());
      const deadlineAt = deadlineIfStartedAt(job, type, this.d.config.defaultJobTimeoutSeconds, Date.now());
      const r: Reservation = {
        tenantId: job.tenantId,
        memBytes: job.memBytes,
        type,
        params,
        placement,
        deadlineAt,
      };
      a.admit(r);
      return r;
    } catch {
      return null; // queued instead: its claim fails it with the reason
    }
  }

  /** Runs a claimed job whose room is admitted (released once its outcome lands). */
  private run(job: JobRecord, type: AnyJobType, params: unknown, placement: Placement): RunningJob {
    const startedAt = job.startedAt ?? Date.now();
    this.d.metrics.jobWait.observe({ type: job.type }, Math.max(0, startedAt - job.createdAt) / 1000);
    const deadlineAt =
      job.deadlineAt ?? deadlineIfStartedAt(job, type, this.d.config.defaultJobTimeoutSeconds, startedAt);
    const r = newRunningJob(job, placement, deadlineAt);
    this.running.set(job.id, r);
    (r as { done: Promise<void> }).done = runJob(r, type, params, this.d)
      .then(({ outcome, ev }) => this.hooks.ended(r, outcome, ev))
      .catch((e: unknown) =>
        this.d.log('error', `ending job ${job.id}: ${e instanceof Error ? e.message : String(e)}`),
      );
    return r;
  }
}
