/**
 * A node agent: takes jobs of the device classes it has from the queue, runs them on the local runtime
 * through the service's job type registry, and commits each outcome to the job store fenced by the
 * attempt it started. A job the store says is final (another agent committed it) is skipped; a job whose
 * earlier attempt was in flight (its agent died) is a re-run and is counted. Without a store (queue-only
 * mode) the result travels back as the queue's completion value.
 */
import { hostname } from 'node:os';
import { asTandemError, isTandemError } from '../core/errors.js';
import type { AnyJobType, JobContext, ServiceRuntime } from '../service/jobs/job-type.js';
import type { JobTypeRegistry } from '../service/jobs/registry.js';
import { JobFailure, type Consumer, type JobQueue, type QueueJob } from '../service/queue/queue.js';
import type { JobStoreApi, ScaleFinish } from '../service/store/store.js';
import type { AgentDevice, AgentInfo, AgentRegistry } from '../service/queue/heartbeat.js';
import { AttemptDeadline, expiredAtStart } from './attempt-deadline.js';
import { StoreBatcher } from './store-batcher.js';

export interface AgentOptions {
  readonly name: string;
  readonly queue: JobQueue;
  readonly store: JobStoreApi | null;
  readonly registry: JobTypeRegistry;
  readonly rt: ServiceRuntime | null;
  readonly devices: () => readonly AgentDevice[];
  readonly deviceClasses: readonly string[];
  readonly concurrency: number;
  readonly heartbeat: AgentRegistry | null;
  readonly heartbeatMs: number;
  readonly log: (msg: string) => void;
  /** How long a job past its deadline may take to stop before it is failed anyway (default 10 s). */
  readonly deadlineGraceMs?: number;
}

const PROGRESS_WRITE_MS = 250;
/** How often running jobs' cancel requests (POST /v1/jobs/:id/cancel on a control plane) are read. */
const CANCEL_POLL_MS = 500;

export class Agent {
  private consumer: Consumer | null = null;
  private timer: NodeJS.Timeout | null = null;
  private running = 0;
  private reservedBytes = 0;
  jobsDone = 0;
  reruns = 0;

  private readonly batcher: StoreBatcher | null;
  /** Running jobs (store mode) by id, aborted when the store says a cancel was requested. */
  private readonly cancellable = new Map<string, AbortController>();
  private cancelTimer: NodeJS.Timeout | null = null;

  constructor(private readonly o: AgentOptions) {
    this.batcher = o.store ? new StoreBatcher(o.store, o.name, o.log) : null;
  }

  async start(): Promise<void> {
    await this.beat();
    this.timer = setInterval(() => void this.beat(), this.o.heartbeatMs);
    if (this.o.store) this.cancelTimer = setInterval(() => void this.pollCancels(), CANCEL_POLL_MS);
    this.consumer = this.o.queue.consume({
      deviceClasses: this.o.deviceClasses,
      concurrency: this.o.concurrency,
      fits: (j) => this.fits(j.deviceClass, j.memBytes),
      handler: (job, signal) => this.handle(job, signal),
    });
  }

  /** A job fits when the free memory of the class's largest device, less what running jobs hold, can take it. */
  private fits(deviceClass: string, memBytes: number): boolean {
    if (memBytes <= 0) return true;
    const devs = this.o.devices().filter((d) => d.deviceClass === deviceClass);
    const free = Math.max(0, ...devs.map((d) => d.freeBytes)) - this.reservedBytes;
    return memBytes <= free;
  }

  info(): AgentInfo {
    const devices = this.o.devices();
    const maxJobBytes: Record<string, number> = {};
    for (const c of this.o.deviceClasses)
      maxJobBytes[c] = Math.max(0, ...devices.filter((d) => d.deviceClass === c).map((d) => d.memoryBytes));
    return {
      name: this.o.name,
      host: hostname(),
      pid: process.pid,
      deviceClasses: this.o.deviceClasses,
      devices,
      running: this.running,
      capacity: this.o.concurrency * this.o.deviceClasses.length,
      jobsDone: this.jobsDone,
      reruns: this.reruns,
      maxJobBytes,
      at: Date.now(),
    };
  }

  private async beat(): Promise<void> {
    try {
      await this.o.heartbeat?.beat(this.info());
    } catch (e) {
      this.o.log(`heartbeat: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  /** One query for all running jobs; only while some run. */
  private async pollCancels(): Promise<void> {
    if (this.cancellable.size === 0 || !this.o.store) return;
    try {
      for (const id of await this.o.store.cancelRequested([...this.cancellable.keys()]))
        this.cancellable.get(id)?.abort();
    } catch {
      // the store is away: the next poll asks again
    }
  }

  private async handle(job: QueueJob, signal: AbortSignal): Promise<unknown> {
    this.running++;
    this.reservedBytes += job.memBytes;
    try {
      return this.o.store ? await this.runStored(job, signal) : await this.runInline(job, signal);
    } finally {
      this.running--;
      this.reservedBytes -= job.memBytes;
    }
  }

  /** Queue-only mode: the job's type and params travel in the queue; the result goes back with it. */
  private async runInline(job: QueueJob, signal: AbortSignal): Promise<unknown> {
    const type = this.o.registry.get(String(job.data['type']));
    const params = type.parse((job.data['params'] ?? {}) as Record<string, unknown>);
    const result = await type.run(
      this.context(
        job.id,
        String(job.data['tenantId'] ?? ''),
        job.attemptsMade + 1,
        params,
        signal,
        job,
        null,
      ),
    );
    this.jobsDone++;
    return result;
  }

  private async runStored(job: QueueJob, signal: AbortSignal): Promise<unknown> {
    const store = this.batcher!;
    const started = await store.startAttempt(job.id);
    if (!started) return { skipped: 'final' }; // committed (or cancelled) already: nothing to do
    if (started.rerun) this.reruns++;
    const rec = started.job;
    let type: AnyJobType;
    let params: unknown;
    try {
      type = this.o.registry.get(rec.type);
      params = type.parse(rec.params);
    } catch (e) {
      const err = asTandemError(e, 'TANDEM_ERR_INTERNAL', 'parsing the job');
      await store.finish(rec.id, rec.attempt, { state: 'failed', error: err.toJSON() });
      throw new JobFailure(err.message, false);
    }
    const expired = expiredAtStart(rec);
    if (expired) {
      const committed = await store.finish(rec.id, rec.attempt, expired);
      this.jobsDone++;
      return { committed, state: expired.state };
    }
    const spans: { name: string; startUs: number; endUs: number }[] = [];
    const t0 = Date.now();
    // The job's signal aborts on a cancel request, at its deadline, or when this agent stops.
    const cancel = new AbortController();
    const onStop = (): void => cancel.abort();
    signal.addEventListener('abort', onStop, { once: true });
    this.cancellable.set(rec.id, cancel);
    const deadline = new AttemptDeadline(rec, cancel, this.o.deadlineGraceMs ?? 10_000);
    const ctx = this.context(rec.id, rec.tenantId, rec.attempt, params, cancel.signal, job, spans);
    const run = Promise.resolve()
      .then(() => type.run(ctx))
      .then(
        (result): ScaleFinish => ({ state: 'succeeded', result }),
        (e: unknown): ScaleFinish => {
          // Stopped by its deadline: whatever it threw on the way out, that is why it failed.
          if (deadline.reason) return { state: 'failed', error: deadline.reason.toJSON() };
          const err = asTandemError(e, 'TANDEM_ERR_INTERNAL', `job ${rec.type}`);
          const cancelled = isTandemError(e, 'TANDEM_ERR_CANCELLED');
          return { state: cancelled ? 'cancelled' : 'failed', error: err.toJSON() };
        },
      );
    let outcome: ScaleFinish;
    try {
      // A run that ignores its signal past the grace is left behind: its slot is given back now.
      outcome = await Promise.race([run, deadline.overdue]);
    } finally {
      deadline.clear();
      this.cancellable.delete(rec.id);
      signal.removeEventListener('abort', onStop);
    }
    if (signal.aborted) throw new Error('agent stopping'); // leave it to be re-run elsewhere
    const trace = { agent: this.o.name, attempt: rec.attempt, startedAt: t0, finishedAt: Date.now(), spans };
    const committed = await store.finish(rec.id, rec.attempt, { ...outcome, trace });
    if (!committed) {
      // Normally another attempt won or the job was cancelled. If the store still has the job open
      // (a crash lost our start), fail the delivery so the queue brings it back.
      const now = await this.o.store!.get(rec.id);
      if (now && (now.state === 'queued' || (now.state === 'running' && now.attempt <= rec.attempt)))
        throw new Error(
          `job ${rec.id} attempt ${rec.attempt}: outcome not committed and the job is still open`,
        );
    }
    this.jobsDone++;
    // A job's own failure is final in the store; the queue sees success so it does not retry it.
    return { committed, state: outcome.state };
  }

  private context(
    jobId: string,
    tenantId: string,
    attempt: number,
    params: unknown,
    signal: AbortSignal,
    job: QueueJob,
    spans: { name: string; startUs: number; endUs: number }[] | null,
  ): JobContext<unknown> {
    let lastWrite = 0;
    return {
      jobId,
      tenantId,
      attempt,
      params,
      signal,
      rt: this.o.rt,
      placement: { device: undefined, reason: `agent ${this.o.name}` },
      tags: { job: jobId, tenant: tenantId, agent: this.o.name },
      progress: (fraction, message = '') => {
        const now = Date.now();
        if (now - lastWrite < PROGRESS_WRITE_MS) return;
        lastWrite = now;
        void job.progress(fraction, message).catch(() => undefined);
        void this.o.store
          ?.setProgress(jobId, attempt, fraction, message.slice(0, 200))
          .catch(() => undefined);
      },
      span: (name, startUs, endUs) => {
        spans?.push({ name, startUs, endUs });
      },
    };
  }

  async stop(graceMs = 10_000): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    if (this.cancelTimer) clearInterval(this.cancelTimer);
    await this.consumer?.close(graceMs);
    await this.o.heartbeat?.remove(this.o.name).catch(() => undefined);
  }
}
