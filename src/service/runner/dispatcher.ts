/**
 * Dispatch: takes jobs from the fair queue while there is room (global slots, tenant quotas on
 * concurrent jobs and device memory, total device memory), claims them in the database (attempt + 1),
 * runs them and commits the outcome fenced by that attempt, so a result is committed exactly once.
 * Memory admission reserves for the job fairness picks next (a big job is not starved by small ones)
 * but always admits a job when nothing runs, so it can never livelock.
 */
import { asTandemError, isTandemError, TandemError } from '../../core/errors.js';
import type { ServiceConfig } from '../config.js';
import type { TenantStore } from '../auth/tenants.js';
import type { AnyJobType, JobContext, Placement, ServiceRuntime } from '../jobs/job-type.js';
import type { JobTypeRegistry } from '../jobs/registry.js';
import type { ServiceMetrics } from '../obs/metrics.js';
import type { ChromeTrace } from '../../obs/trace.js';
import { buildJobTrace, type JobTraceCollector } from '../obs/job-trace.js';
import type { FinishOutcome, InsertClaim, JobRecord, JobStore, NewJob } from '../store/job-store.js';
import { Admission, type Footprint } from './admission.js';
import { FairQueue, type QueuedJob } from './fair-queue.js';
import { selectPlacement, type DeviceView } from './hardware-rules.js';
import { deadlineExceeded, deadlineIfStartedAt } from './deadlines.js';
import type { ResultStore } from './result-store.js';
import { OutcomeRetry, unstoredOutcome } from './outcome-retry.js';
import type { StartAtInsert } from './submitter.js';
import type { StoreHealth } from '../store/store-health.js';
import { tenantRuntime } from './tenant-share.js';

export interface DispatcherDeps {
  readonly config: ServiceConfig;
  readonly store: JobStore;
  readonly tenants: TenantStore;
  readonly registry: JobTypeRegistry;
  readonly rt: () => ServiceRuntime | null;
  readonly devices: () => readonly DeviceView[];
  readonly traces: JobTraceCollector;
  readonly results: ResultStore;
  readonly metrics: ServiceMetrics;
  readonly log: (level: 'info' | 'warn' | 'error', msg: string) => void;
  /** Told of every failed and successful store write on the dispatch path (shown by /healthz). */
  readonly health: StoreHealth;
  /**
   * A job still running `deadlineGraceMs` after its deadline (it did not stop at its cancellation
   * point: a task that does not end, e.g. a hung GPU kernel). The answer adds a note to its failure and
   * `after` runs once that failure is committed (the service's watchdog gives up the device there).
   */
  readonly onOverdue?: (job: JobRecord) => OverdueVerdict | null;
}

export interface OverdueVerdict {
  readonly note: string;
  readonly details: Readonly<Record<string, unknown>>;
  readonly after?: () => void;
}

interface RunningJob {
  readonly job: JobRecord;
  readonly placement: Placement;
  readonly done: Promise<void>;
  progress: number;
  message: string;
  /** What the database holds (written at most every PROGRESS_WRITE_MS), for the final record. */
  savedProgress: number;
  savedMessage: string;
  /** Made when the job first looks at its signal: an AbortSignal costs several µs a job. */
  abort: AbortController | null;
  /** A cancel or shutdown asked the job to stop (its signal is, or will be made, aborted). */
  stopRequested: boolean;
  cancelRequested: boolean;
  /** Why the job was asked to stop (the abort's reason): a cancel, its deadline, or a shutdown. */
  stopReason: TandemError | null;
  /** Epoch ms; the deadline sweep stops the job past it. */
  readonly deadlineAt: number;
  deadlineHit: boolean;
  /** Failed by the sweep while its run had not returned: its slot is freed, its late outcome dropped. */
  abandoned: boolean;
}

const PROGRESS_WRITE_MS = 250;
/** How often running jobs' deadlines are checked (a deadline is honoured to within this). */
const DEADLINE_SWEEP_MS = 50;

export type FinishedListener = (jobId: string, read: () => JobRecord | null) => void;

/** Room held for a job that is being inserted already running. */
interface Reservation extends Footprint {
  readonly type: AnyJobType;
  readonly params: unknown;
  readonly placement: Placement;
  readonly deadlineAt: number;
}

export class Dispatcher {
  readonly queue: FairQueue;
  private readonly running = new Map<string, RunningJob>();
  /** Running jobs, and those reserved to start in their insert's transaction. */
  private readonly admitted: Admission;
  private pumpScheduled = false;
  private stopping = false;
  /** Paused until the runtime has opened (or failed to), so placement sees the real devices. */
  private paused = true;
  private readonly finishedListeners = new Set<FinishedListener>();
  /** Finished jobs whose outcome commit failed, retried until it lands (disk full). */
  private readonly outcomes: OutcomeRetry;
  /** After a claim the store refused: the pump waits this long before trying again (backoff). */
  private claimBackoffMs = 0;
  private sweep: NodeJS.Timeout | null = null;

  constructor(private readonly d: DispatcherDeps) {
    this.queue = new FairQueue((id) => d.tenants.get(id)?.weight ?? 1);
    this.admitted = new Admission(d.tenants, d.config);
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
    this.schedulePump();
    return { requeued, queued: this.queue.size };
  }

  /** A job just inserted as queued (one inserted running was started by its StartAtInsert). */
  enqueue(job: JobRecord): void {
    if (job.state !== 'queued') return;
    const { id, seq, tenantId, priority, memBytes } = job;
    this.queue.push({ id, seq, tenantId, priority, memBytes, record: job });
    this.schedulePump();
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

  get runningCount(): number {
    return this.running.size;
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
      this.stopJob(r, new TandemError('TANDEM_ERR_CANCELLED', 'cancelled while running'));
      return 'cancelling';
    }
    return 'final';
  }

  resume(): void {
    this.paused = false;
    if (!this.sweep && !this.stopping) {
      this.sweep = setInterval(() => this.checkDeadlines(), DEADLINE_SWEEP_MS);
      this.sweep.unref();
    }
    this.schedulePump();
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
      if (now < r.deadlineAt) continue;
      if (!r.deadlineHit) {
        r.deadlineHit = true;
        this.stopJob(r, deadlineExceeded(r.job, now));
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
    try {
      const failed: FinishOutcome = { state: 'failed', error: err.toJSON() };
      this.commitOrRetry(r.job, failed, this.d.traces.events(r.job.id), r);
    } finally {
      this.ended(r);
    }
    verdict?.after?.();
  }

  private schedulePump(): void {
    if (this.pumpScheduled || this.stopping || this.paused) return;
    this.pumpScheduled = true;
    setImmediate(() => {
      this.pumpScheduled = false;
      this.pump();
    });
  }

  private totalDeviceMemory(): number {
    return this.d.devices().reduce((s, dv) => s + dv.memoryBytes, 0);
  }

  private pump(): void {
    if (this.queue.size === 0) return; // after every job's end: nothing to place, no device snapshot
    const total = this.totalDeviceMemory();
    const a = this.admitted;
    while (!this.stopping && a.hasSlot() && this.queue.size > 0) {
      const fair = this.queue.peekFair();
      // Reserve memory for the fairly-next job instead of letting smaller ones overtake it forever.
      if (fair && a.tenantRoom(fair) && !a.fits(fair, total)) return;
      const next = this.queue.next((j) => a.tenantRoom(j) && a.fits(j, total));
      if (!next) return;
      try {
        this.start(next);
        if (this.claimBackoffMs > 0) this.d.health.succeeded();
        this.claimBackoffMs = 0;
      } catch (e) {
        // The store refused the claim (disk full): the job stays queued, here and in the database.
        this.queue.push(next);
        this.d.health.failed('claiming a job', e);
        this.claimBackoffMs = Math.min(2000, Math.max(25, 2 * this.claimBackoffMs));
        setTimeout(() => this.schedulePump(), this.claimBackoffMs).unref();
        return;
      }
    }
  }

  /**
   * Starting `job` in its insert's own transaction, which then commits its claim too (one commit and
   * one event-loop turn less than queue → pump → claim). At the group commit, `reserve` takes room
   * only when nothing is queued (fairness has nobody to prefer it to), a slot, the tenant's quotas and
   * device memory allow, and the job can be placed; else the job is queued as usual.
   */
  startAtInsert(job: NewJob, parsed: unknown): StartAtInsert {
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
        if (held) this.run(record, held.type, held.params, held.placement);
        held = null;
      },
      unreserve: () => {
        if (held) this.admitted.release(held);
        held = null;
        this.schedulePump();
      },
    };
  }

  private reserve(job: NewJob, parsed: unknown): Reservation | null {
    const a = this.admitted;
    if (this.paused || this.stopping || this.queue.size > 0 || !a.hasSlot()) return null;
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
      return null; // queued instead: start() fails it with the reason
    }
  }

  private start(q: QueuedJob): void {
    let type: AnyJobType;
    let params: unknown;
    let placement: Placement;
    // A job queued by this process carries its record; one loaded at restart is read here.
    const record = q.record ?? this.d.store.get(q.id);
    if (!record || record.state !== 'queued') return;
    try {
      type = this.d.registry.get(record.type);
      params = type.parse(record.params);
      placement = selectPlacement(
        this.d.config.hardwareRules,
        record.jobClass,
        type.requestedDevice?.(params),
        this.d.devices(),
      );
    } catch (e) {
      // A job that cannot even be placed fails now (claimed first so the failure is fenced too).
      const claimed = this.d.store.claim(q.id, null);
      if (claimed)
        this.commitOrRetry(
          claimed,
          { state: 'failed', error: asTandemError(e, 'TANDEM_ERR_INTERNAL', 'placing the job').toJSON() },
          undefined,
        );
      return;
    }
    const now = Date.now();
    const deadline = deadlineIfStartedAt(record, type, this.d.config.defaultJobTimeoutSeconds, now);
    const job = this.d.store.claim(q.id, placement.device ?? 'auto', placement.reason, now, record, deadline);
    if (!job) return;
    if (job.deadlineAt != null && job.deadlineAt <= now) {
      // Its budget ran out in an earlier process (a restart re-queued it): it fails without running.
      const err = deadlineExceeded(job, now, 'its time ran out before this start (re-queued by a restart)');
      this.commitOrRetry(job, { state: 'failed', error: err.toJSON() }, undefined);
      return;
    }
    this.admitted.admit(job);
    this.run(job, type, params, placement);
  }

  /** Runs a claimed job whose room is admitted (released when it ends). */
  private run(job: JobRecord, type: AnyJobType, params: unknown, placement: Placement): void {
    this.d.metrics.jobWait.observe(
      { type: job.type },
      Math.max(0, (job.startedAt ?? Date.now()) - job.createdAt) / 1000,
    );
    const entry: RunningJob = {
      job,
      placement,
      progress: 0,
      message: '',
      savedProgress: 0,
      savedMessage: '',
      abort: null,
      stopRequested: false,
      cancelRequested: false,
      stopReason: null,
      deadlineAt:
        job.deadlineAt ??
        deadlineIfStartedAt(job, type, this.d.config.defaultJobTimeoutSeconds, job.startedAt ?? Date.now()),
      deadlineHit: false,
      abandoned: false,
      done: Promise.resolve(),
    };
    (entry as { done: Promise<void> }).done = this.execute(entry, type, params);
    this.running.set(job.id, entry);
  }

  private async execute(r: RunningJob, type: AnyJobType, params: unknown): Promise<void> {
    const { job } = r;
    const ev = this.d.traces.begin(job.id);
    let lastWrite = 0;
    const ctx: JobContext<unknown> = {
      jobId: job.id,
      tenantId: job.tenantId,
      attempt: job.attempt,
      params,
      get signal(): AbortSignal {
        if (!r.abort) {
          r.abort = new AbortController();
          if (r.stopRequested) r.abort.abort(r.stopReason ?? undefined);
        }
        return r.abort.signal;
      },
      get aborted(): boolean {
        return r.stopRequested;
      },
      // Its tasks are charged to its tenant: devices are shared by weight at the task level too.
      rt: tenantRuntime(
        this.d.rt(),
        job.tenantId,
        this.d.tenants.get(job.tenantId)?.weight ?? 1,
        this.d.config.fairShare,
      ),
      placement: r.placement,
      tags: { job: job.id, tenant: job.tenantId },
      progress: (fraction, message = '') => {
        r.progress = Math.min(1, Math.max(0, Number.isFinite(fraction) ? fraction : 0));
        r.message = message.slice(0, 200);
        const now = Date.now();
        if (now - lastWrite >= PROGRESS_WRITE_MS) {
          lastWrite = now;
          try {
            if (this.d.store.setProgress(job.id, job.attempt, r.progress, r.message)) {
              r.savedProgress = r.progress;
              r.savedMessage = r.message;
            }
          } catch (e) {
            this.d.health.failed(`saving the progress of job ${job.id}`, e); // advisory: the job goes on
          }
        }
      },
      span: (name, startUs, endUs, args) => {
        ev.spans.push({ name, startUs, endUs, ...(args ? { args } : {}) });
      },
    };
    let outcome: FinishOutcome;
    try {
      await Promise.resolve(); // run never starts synchronously inside pump()
      const result = await type.run(ctx);
      outcome = { state: 'succeeded', result };
    } catch (e) {
      if (isTandemError(r.stopReason, 'TANDEM_ERR_DEADLINE_EXCEEDED')) {
        // Stopped by its deadline: whatever it threw on the way out, that is why it failed.
        outcome = { state: 'failed', error: r.stopReason.toJSON() };
      } else {
        const err = asTandemError(e, 'TANDEM_ERR_INTERNAL', `job ${job.type}`);
        const cancelled = r.stopRequested || isTandemError(e, 'TANDEM_ERR_CANCELLED');
        outcome = { state: cancelled ? 'cancelled' : 'failed', error: err.toJSON() };
      }
    }
    // Failed by the deadline sweep already (its slot freed): this late outcome is dropped.
    if (r.abandoned) return;
    // A job whose outcome waits for the store keeps its room until it lands: no new job starts while
    // none could be stored (back-pressure on a full disk).
    let waiting = false;
    try {
      // Shutting down: leave the job 'running' in the database; the next start re-queues it.
      if (!this.stopping) waiting = this.commitOrRetry(job, outcome, ev, r, true);
    } finally {
      this.ended(r, waiting);
    }
  }

  /**
   * A job's trace and running entry are given back once its outcome is committed (or it was abandoned),
   * and its room too unless `keepRoom` (its outcome waits for the store; released when it lands).
   */
  private ended(r: RunningJob, keepRoom = false): void {
    this.d.traces.end(r.job.id);
    this.running.delete(r.job.id);
    if (!keepRoom) this.admitted.release(r.job);
    this.schedulePump();
  }

  /**
   * commit(), and when the store refuses it (disk full) a retry until it lands: the worker is done,
   * so nothing may stay `running` in the database without one. True when the retry holds the job's
   * admitted room (released, and the pump run, once it lands).
   */
  private commitOrRetry(
    job: JobRecord,
    outcome: FinishOutcome,
    ev: ReturnType<JobTraceCollector['begin']> | undefined,
    r?: RunningJob,
    holdRoom = false,
  ): boolean {
    const waits = this.outcomes.commit(job.id, {
      full: () => this.commit(job, outcome, ev, r),
      fallback: (why) => this.commit(job, unstoredOutcome(outcome.state, why), ev, r),
      landed: () => {
        if (holdRoom) this.admitted.release(job);
        this.schedulePump();
      },
    });
    return waits && holdRoom;
  }

  private commit(
    job: JobRecord,
    outcome: FinishOutcome,
    ev: ReturnType<JobTraceCollector['begin']> | undefined,
    r?: RunningJob,
  ): void {
    const finishedAt = Date.now();
    let o = outcome;
    if (o.state === 'succeeded') {
      const stored = this.d.results.store(job.id, o.result);
      o = { ...o, result: stored.inline, resultFile: stored.file };
    }
    const placement = r?.placement.reason;
    // Where its tasks ran (none: null) replaces where it was meant to go (a kind, or 'auto').
    if (ev) o = { ...o, device: ev.devices.size ? [...ev.devices].sort().join(',') : null };
    // The record exactly as finish() below writes it (the columns it sets, the rest as claimed), so
    // the listeners (a ?wait answer) need not read it back.
    const base: JobRecord = {
      ...job,
      state: o.state,
      finishedAt,
      error: o.error ?? null,
      result: o.result ?? null,
      resultFile: o.resultFile ?? null,
      progress: o.state === 'succeeded' ? 1 : (r?.savedProgress ?? job.progress),
      message: r?.savedMessage ?? job.message,
      cancelRequested: job.cancelRequested || (r?.cancelRequested ?? false),
      device: o.device === undefined ? job.device : o.device,
    };
    // The trace is built when its batch is written (or first read), off this path.
    const times = { resultStoredAt: Date.now(), ...(placement ? { placement } : {}) };
    const trace = (): ChromeTrace => buildJobTrace(base, ev, times, finishedAt);
    const final: JobRecord = { ...base, traceFile: this.d.traces.write(job.id, trace) };
    if (!this.d.store.finish(job.id, job.attempt, { ...o, traceFile: final.traceFile }, finishedAt)) {
      this.d.log('warn', `job ${job.id} attempt ${job.attempt}: outcome not committed (superseded)`);
      return;
    }
    this.d.health.succeeded();
    this.d.metrics.jobsFinished.inc({ type: job.type, state: o.state });
    if (o.error?.code === 'TANDEM_ERR_DEADLINE_EXCEEDED')
      this.d.metrics.deadlinesExceeded.inc({
        type: job.type,
        hung: String('hungDevices' in o.error.details),
      });
    if (job.startedAt !== null)
      this.d.metrics.jobRun.observe({ type: job.type, state: o.state }, (finishedAt - job.startedAt) / 1000);
    this.notifyFinished(job.id, final);
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

  private stopJob(r: RunningJob, reason: TandemError): void {
    if (r.stopRequested) return; // the first reason stands (a cancel stays a cancel past the deadline)
    r.stopRequested = true;
    r.stopReason = reason;
    r.abort?.abort(reason);
  }

  /** Stops dispatching and aborts running jobs without committing them (they re-run after restart). */
  async stop(timeoutMs = 5000): Promise<void> {
    this.stopping = true;
    this.outcomes.close(); // what is pending stays running in the database: the next start re-queues it
    if (this.sweep) clearInterval(this.sweep);
    this.sweep = null;
    for (const r of this.running.values())
      this.stopJob(r, new TandemError('TANDEM_ERR_CANCELLED', 'the service is stopping'));
    const all = Promise.allSettled([...this.running.values()].map((r) => r.done));
    await Promise.race([all, new Promise((res) => setTimeout(res, timeoutMs).unref())]);
    await this.d.traces.close(); // traces are written on a background thread
  }
}
