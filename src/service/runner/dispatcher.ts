/**
 * Dispatch: takes jobs from the fair queue while there is room (global slots, tenant quotas on
 * concurrent jobs and device memory, total device memory), claims them in the database (attempt + 1),
 * runs them and commits the outcome fenced by that attempt, so a result is committed exactly once.
 * Memory admission reserves for the job fairness picks next (a big job is not starved by small ones)
 * but always admits a job when nothing runs, so it can never livelock.
 *
 * The store is written once per event-loop turn (`turn`, turn-commit.ts): the outcomes of the jobs that
 * ended since the last turn, then the claims of the jobs that fit the room those outcomes freed, in one
 * transaction and one fsync. A job starts, and an outcome is announced, only after that commit.
 */
import { TandemError } from '../../core/errors.js';
import type { FinishOutcome, JobRecord } from '../store/job-store.js';
import { Admission } from './admission.js';
import { FairQueue } from './fair-queue.js';
import { deadlineExceeded } from './deadlines.js';
import { OutcomeRetry, unstoredOutcome } from './outcome-retry.js';
import { Starts, type ClaimTally } from './job-start.js';
import type { StartAtInsert } from './submitter.js';
import { stopJob, type RunningJob } from './job-run.js';
import { countFinished, prepareFinish, type PendingFinish, type PreparedFinish } from './job-finish.js';
import { TurnCommit, type TurnRow } from './turn-commit.js';

import type { DispatcherDeps } from './dispatcher-deps.js';

export type { DispatcherDeps, OverdueVerdict } from './dispatcher-deps.js';

/** How often running jobs' deadlines are checked (a deadline is honoured to within this). */
const DEADLINE_SWEEP_MS = 50;

export type FinishedListener = (jobId: string, read: () => JobRecord | null) => void;

export class Dispatcher {
  readonly queue: FairQueue;
  private readonly running = new Map<string, RunningJob>();
  /** Running jobs, and those reserved to start in their insert's transaction. */
  private readonly admitted: Admission;
  /** Claims, placement and the start of runs (job-start.ts). */
  private readonly starts: Starts;
  private turnScheduled = false;
  private readonly turnFn = (): void => this.turn();
  private stopping = false;
  /** Paused until the runtime has opened (or failed to), so placement sees the real devices. */
  private paused = true;
  private readonly finishedListeners = new Set<FinishedListener>();
  /** Outcomes of jobs that ended since the last turn, committed by the next one. */
  private finishing: PendingFinish[] = [];
  /** Finished jobs whose outcome commit failed, retried until it lands (disk full). */
  private readonly outcomes: OutcomeRetry;
  private sweep: NodeJS.Timeout | null = null;

  constructor(private readonly d: DispatcherDeps) {
    this.queue = new FairQueue((id) => d.tenants.get(id)?.weight ?? 1);
    this.admitted = new Admission(d.tenants, d.config);
    this.starts = new Starts(d, this.queue, this.admitted, this.running, {
      scheduleTurn: () => this.scheduleTurn(),
      finishLater: (p) => this.finishLater(p),
      ended: (r, outcome, ev) => this.ended(r, outcome, ev),
      stopping: () => this.stopping,
      paused: () => this.paused,
    });
    this.outcomes = new OutcomeRetry({
      health: d.health,
      giveUpMs: d.config.outcomeRetryMs,
      log: (level, msg) => d.log(level, msg),
    });
    d.traces.onWriteError = (jobId, e) =>
      d.log('warn', `writing the trace of job ${jobId}: ${e instanceof Error ? e.message : String(e)}`);
  }

  /** At start: jobs that were running when the process died go back to the queue; all queued load. */
  recover(): { requeued: number; queued: number } {
    const requeued = this.d.store.requeueRunning();
    for (const j of this.d.store.queued()) this.queue.push(j);
    this.scheduleTurn();
    return { requeued, queued: this.queue.size };
  }

  /** A job just inserted as queued (one inserted running was started by its StartAtInsert). */
  enqueue(job: JobRecord): void {
    if (job.state !== 'queued') return;
    const { id, seq, tenantId, priority, memBytes } = job;
    this.queue.push({ id, seq, tenantId, priority, memBytes, record: job });
    this.scheduleTurn();
  }

  /**
   * `cb(jobId, read)` after each committed outcome; `read()` gives the committed record (the one the
   * commit wrote, built in memory: no query).
   */
  onJobFinished(cb: FinishedListener): () => void {
    this.finishedListeners.add(cb);
    return () => this.finishedListeners.delete(cb);
  }

  /**
   * Live progress of a running job (fresher than the database, which is written a few times a second),
   * and the devices its finished tasks ran on so far (null before the first).
   */
  live(
    jobId: string,
  ): { progress: number; message: string; placement: string; device: string | null } | undefined {
    const r = this.running.get(jobId);
    if (!r) return undefined;
    const devices = this.d.traces.events(jobId)?.devices;
    return {
      progress: r.progress,
      message: r.message,
      placement: r.placement.reason,
      device: devices?.size ? [...devices].sort().join(',') : null,
    };
  }

  runningByTenant(): ReadonlyMap<string, number> {
    return this.admitted.byTenant();
  }

  /** Jobs running here, and those claimed whose run waits for their turn to be durable. */
  get runningCount(): number {
    return this.running.size + this.starts.startingCount;
  }

  /** Cancels a queued job at once; asks a running one to stop (its run sees the AbortSignal). */
  cancel(job: JobRecord): 'cancelled' | 'cancelling' | 'final' {
    if (job.state === 'queued' && this.d.store.cancelQueued(job.id)) {
      this.queue.remove(job.id);
      this.d.metrics.jobsFinished.inc({ type: job.type, state: 'cancelled' });
      this.notifyFinished(job.id);
      return 'cancelled';
    }
    const r = this.running.get(job.id);
    if (r && this.d.store.requestCancel(job.id)) {
      r.cancelRequested = true;
      stopJob(r, new TandemError('TANDEM_ERR_CANCELLED', 'cancelled while running'));
      return 'cancelling';
    }
    // Claimed, its run waiting for its turn to be durable: it starts cancelled.
    if (!r && this.starts.cancelBeforeRun(job.id) && this.d.store.requestCancel(job.id)) return 'cancelling';
    return 'final';
  }

  resume(): void {
    this.paused = false;
    if (!this.sweep && !this.stopping) {
      this.sweep = setInterval(() => this.checkDeadlines(), DEADLINE_SWEEP_MS);
      this.sweep.unref();
    }
    this.scheduleTurn();
  }

  /** Starting a job in its insert's own transaction (see Starts.atInsert). */
  startAtInsert(...args: Parameters<Starts['atInsert']>): StartAtInsert {
    return this.starts.atInsert(...args);
  }

  /**
   * Past its deadline a job is asked to stop (its signal aborts with TANDEM_ERR_DEADLINE_EXCEEDED; it
   * stops at its next task or step boundary, drains and fails). One still running `deadlineGraceMs`
   * later is failed here and its slot freed (onOverdue decides what else: a hung GPU is given up).
   */
  private checkDeadlines(): void {
    if (this.running.size === 0 || this.stopping) return;
    const now = Date.now();
    for (const r of [...this.running.values()]) {
      if (now < r.deadlineAt || r.finishing) continue; // a finishing job's outcome is already decided
      if (!r.deadlineHit) {
        r.deadlineHit = true;
        stopJob(r, deadlineExceeded(r.job, now));
      } else if (now >= r.deadlineAt + this.d.config.deadlineGraceMs) this.abandon(r, now);
    }
  }

  private abandon(r: RunningJob, now: number): void {
    const verdict = this.d.onOverdue?.(r.job) ?? null;
    const note =
      verdict?.note ??
      `it did not stop within ${this.d.config.deadlineGraceMs} ms of its deadline; its slot was freed`;
    this.d.log('warn', `job ${r.job.id} (${r.job.type}) overdue: ${note}`);
    r.abandoned = true;
    const err = deadlineExceeded(r.job, now, note, verdict?.details);
    const failed: FinishOutcome = { state: 'failed', error: err.toJSON() };
    // Its slot is freed now (its run may never return); the failure lands with the next turn.
    const ev = this.d.traces.events(r.job.id);
    const after = verdict?.after;
    this.finishLater({ job: r.job, outcome: failed, ev, r, holdsRoom: false, ...(after ? { after } : {}) });
    this.forget(r);
    this.admitted.release(r.job);
  }

  /**
   * A job's run returned with `outcome`. It is queued for the next turn's commit, holding the job's room
   * until it lands; while the service stops the job is left `running` in the database (the next start
   * re-queues it) and its room freed.
   */
  private ended(r: RunningJob, outcome: FinishOutcome, ev: PendingFinish['ev']): void {
    if (r.abandoned) return; // failed by the deadline sweep already: this late outcome is dropped
    if (this.stopping) {
      this.forget(r);
      this.admitted.release(r.job);
      return;
    }
    r.finishing = true;
    this.finishLater({ job: r.job, outcome, ev, r, holdsRoom: true });
  }

  /** The job is no longer running here (its outcome landed, waits in the retrier, or was dropped). */
  private forget(r: RunningJob): void {
    this.d.traces.end(r.job.id);
    this.running.delete(r.job.id);
  }

  private finishLater(p: PendingFinish): void {
    this.finishing.push(p);
    this.scheduleTurn();
  }

  private scheduleTurn(): void {
    if (this.turnScheduled) return;
    if (this.finishing.length === 0 && (this.stopping || this.paused)) return;
    this.turnScheduled = true;
    setImmediate(this.turnFn);
  }

  /**
   * One turn: the outcomes that arrived since the last one, then the claims that fit (the room those
   * outcomes freed included), in one transaction. Nothing to write: no transaction.
   */
  private turn(): void {
    this.turnScheduled = false;
    const finishes = this.finishing;
    this.finishing = [];
    if (finishes.length === 0 && !this.starts.mayClaim()) return;
    const t = new TurnCommit(
      this.d.store,
      (e) => this.d.log('error', `after a dispatch commit: ${errorText(e)}`),
      (e) => this.d.health.failed('syncing the job store', e),
    );
    const tally: ClaimTally = { landed: 0, refused: null };
    t.run(
      finishes.map((p) => this.finishRow(p)),
      (turn) => this.starts.claimInto(turn, tally),
      () => this.starts.afterTurn(tally),
    );
  }

  /** The commit of one outcome as a row of the turn. */
  private finishRow(p: PendingFinish): TurnRow {
    let prepared: PreparedFinish | null = null;
    let landed = false;
    let released = false;
    return {
      write: () => {
        prepared = prepareFinish(this.d, p, p.outcome);
        landed = this.d.store.finish(p.job.id, p.job.attempt, prepared.outcome, prepared.finishedAt);
        // Its room goes to this turn's claims (given back if the turn is lost).
        if (p.holdsRoom) this.admitted.release(p.job);
        released = p.holdsRoom;
      },
      committed: (error) => {
        if (p.r && !p.r.abandoned) this.forget(p.r);
        if (error !== null) this.retryFinish(p, error);
        else this.announce(p.job, prepared!, landed);
        p.after?.();
      },
      lost: (error) => {
        if (released) this.admitted.admit(p.job);
        if (p.r && !p.r.abandoned) this.forget(p.r);
        this.retryFinish(p, error);
        p.after?.();
      },
    };
  }

  /** An outcome the store refused: retried on its own until it lands (outcome-retry.ts). */
  private retryFinish(p: PendingFinish, error: unknown): void {
    this.d.log('error', `committing job ${p.job.id}: ${errorText(error)} (retrying)`);
    const commitNow = (outcome: FinishOutcome): void => {
      const prepared = prepareFinish(this.d, p, outcome);
      const landed = this.d.store.finish(p.job.id, p.job.attempt, prepared.outcome, prepared.finishedAt);
      this.announce(p.job, prepared, landed);
    };
    this.outcomes.add(p.job.id, error, {
      full: () => commitNow(p.outcome),
      fallback: (why) => commitNow(unstoredOutcome(p.outcome.state, why)),
      landed: () => {
        if (p.holdsRoom) this.admitted.release(p.job);
        this.scheduleTurn();
      },
    });
  }

  /** A committed outcome: counted and told to the listeners (a superseded one only logged). */
  private announce(job: JobRecord, f: PreparedFinish, landed: boolean): void {
    if (!landed) {
      this.d.log('warn', `job ${job.id} attempt ${job.attempt}: outcome not committed (superseded)`);
      return;
    }
    this.d.health.succeeded();
    countFinished(this.d.metrics, f);
    this.notifyFinished(job.id, f.record);
  }

  /**
   * Tells the listeners a job reached a final state. `read()` gives `committed` when the caller has the
   * record it committed, else reads it (one SQLite query) only if a listener asks.
   */
  private notifyFinished(jobId: string, committed?: JobRecord): void {
    if (this.finishedListeners.size === 0) return;
    let rec: JobRecord | null | undefined = committed;
    const read = (): JobRecord | null => (rec === undefined ? (rec = this.d.store.get(jobId)) : rec);
    for (const cb of this.finishedListeners) cb(jobId, read);
  }

  /**
   * Stops dispatching and aborts running jobs without committing them (they re-run after restart).
   * Outcomes already in hand are committed first, as each was at its job's end before turns.
   */
  async stop(timeoutMs = 5000): Promise<void> {
    this.stopping = true;
    if (this.finishing.length > 0) this.turn();
    this.outcomes.close(); // what is pending stays running in the database: the next start re-queues it
    if (this.sweep) clearInterval(this.sweep);
    this.sweep = null;
    for (const r of this.running.values())
      stopJob(r, new TandemError('TANDEM_ERR_CANCELLED', 'the service is stopping'));
    const all = Promise.allSettled([...this.running.values()].map((r) => r.done));
    await Promise.race([all, new Promise((res) => setTimeout(res, timeoutMs).unref())]);
    await this.d.traces.close(); // traces are written on a background thread
  }
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
