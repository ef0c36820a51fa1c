/**
 * The scaled-out JobsApi: the PostgreSQL job store is the truth, the BullMQ queue carries the work to
 * agents. Submit stores the job first (acknowledged = durable), then places it (a queue lane, or held
 * with a reason when no live agent could fit it); the control plane's reconciler retries what failed.
 * Cancel removes a queued job from store and queue, and marks a running one for its agent, which
 * aborts it at its next cancellation point. Traces are built from the record and the attempt log.
 */
import { memoryEstimate } from '../jobs/job-type.js';
import type { JobTypeRegistry } from '../jobs/registry.js';
import {
  isoTime,
  requireResult,
  viewOf,
  visibleJob,
  type Caller,
  type CancelOutcome,
  type JobsApi,
  type JobView,
  type ListRequest,
  type SubmitRequest,
} from '../api/jobs-api.js';
import { buildJobTrace, type JobSpan } from '../obs/job-trace.js';
import { resolveTimeoutMs } from '../runner/deadlines.js';
import type { InsertOutcome, JobRecord } from '../store/job-store.js';
import { HELD_PREFIX, type AttemptRow, type JobStoreApi } from '../store/store.js';
import type { SubmitTracker } from './cluster-backlog.js';
import { placeJobs, type PlaceDeps } from './placement.js';

export interface ScaledJobsDeps {
  readonly store: JobStoreApi;
  readonly registry: JobTypeRegistry;
  /** Live agents, store and queue for placement (read fresh for each placement). */
  placeDeps(): Promise<PlaceDeps>;
  /** A job's budget when neither its request nor its type names one (seconds). */
  readonly defaultJobTimeoutSeconds?: number;
  /** Told of each submission (the load shedder's backlog: cluster-backlog.ts). */
  readonly tracker?: SubmitTracker;
}

const FINAL = new Set(['succeeded', 'failed', 'cancelled']);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class ScaledJobsApi implements JobsApi {
  private closed = false;

  constructor(private readonly d: ScaledJobsDeps) {}

  private view(j: JobRecord, attempts?: readonly AttemptRow[]): JobView {
    return {
      ...viewOf(j, j.tenantId),
      held: j.state === 'queued' && j.message.startsWith(HELD_PREFIX),
      ...(attempts
        ? {
            attempts: attempts.map((a) => ({
              attempt: a.attempt,
              agent: a.agent,
              startedAt: isoTime(a.startedAt)!,
              finishedAt: isoTime(a.finishedAt),
              outcome: a.outcome,
            })),
          }
        : {}),
    };
  }

  private async own(caller: Caller, id: string): Promise<JobRecord> {
    return visibleJob(caller, await this.d.store.get(id), id);
  }

  types() {
    return this.d.registry.list();
  }

  jobType(name: string) {
    return this.d.registry.get(name);
  }

  async submit(caller: Caller, req: SubmitRequest) {
    const { type, parsed } = req;
    // The same budget as one node: asked for, else the type's default, within the tenant's ceiling.
    // The agent that runs the job enforces it (agent/attempt-deadline.ts), from the job's first start.
    const timeoutMs = resolveTimeoutMs(
      req.timeoutSeconds,
      type,
      caller,
      this.d.defaultJobTimeoutSeconds ?? 3600,
    );
    const done = this.d.tracker?.submitting(caller.id);
    let out: InsertOutcome | undefined;
    try {
      [out] = await this.d.store.insertMany([
        {
          tenantId: caller.id,
          type: type.name,
          params: req.params,
          priority: req.priority,
          jobClass: type.jobClass(parsed),
          memBytes: memoryEstimate(type, parsed),
          idempotencyKey: req.idempotencyKey,
          timeoutMs,
        },
      ]);
    } finally {
      done?.(out?.ok === true && out.created, out?.ok ? out.job.seq : undefined);
    }
    if (!out || !out.ok) throw out?.error ?? new Error('the store answered the insert with nothing');
    // Durable now. Placement failing (Redis away) is not the caller's problem: the reconciler retries.
    if (out.created) await placeJobs([out.job], await this.d.placeDeps()).catch(() => undefined);
    let job = (await this.d.store.get(out.job.id)) ?? out.job;
    // A waited submit polls the store: the outcome is committed there by whichever agent ran the job.
    const until = Date.now() + req.waitMs;
    for (let pause = 5; !FINAL.has(job.state) && Date.now() < until && !this.closed;) {
      await sleep(Math.min(pause, until - Date.now()));
      pause = Math.min(100, pause * 2);
      job = (await this.d.store.get(job.id)) ?? job;
    }
    const inline = req.waitMs > 0 && job.state === 'succeeded' ? { result: job.result } : {};
    return { created: out.created, job: this.view(job), ...inline };
  }

  async get(caller: Caller, id: string) {
    const job = await this.own(caller, id);
    return this.view(job, await this.d.store.attempts(job.id));
  }

  async list(caller: Caller, q: ListRequest) {
    let tenantId: string | null = caller.id;
    if (caller.role === 'admin') tenantId = !q.tenant || q.tenant === 'all' ? null : q.tenant;
    const jobs = await this.d.store.list({
      tenantId,
      state: q.state,
      type: q.type,
      limit: q.limit,
      beforeSeq: q.before === undefined ? undefined : Number(q.before),
    });
    const counted = q.total ? await this.d.store.count({ tenantId, state: q.state, type: q.type }) : null;
    return {
      jobs: jobs.map((j) => this.view(j)),
      next: jobs.length === q.limit ? String(jobs.at(-1)!.seq) : null,
      ...(counted ? { total: counted.total, totalExact: counted.exact } : {}),
    };
  }

  async cancel(caller: Caller, id: string) {
    const { store } = this.d;
    const job = await this.own(caller, id);
    let outcome: CancelOutcome = 'final';
    if (job.state === 'queued' && (await store.cancelQueued(job.id))) {
      outcome = 'cancelled';
      const d = await this.d.placeDeps();
      await d.queue.cancel(job.id, d.deviceClassOf(job)).catch(() => false);
    } else if (await store.requestCancel(job.id)) outcome = 'cancelling';
    return { outcome, job: this.view((await store.get(job.id)) ?? job) };
  }

  async result(caller: Caller, id: string) {
    const job = await this.own(caller, id);
    requireResult(job);
    return { id: job.id, result: job.result };
  }

  async trace(caller: Caller, id: string) {
    const job = await this.own(caller, id);
    const attempts = await this.d.store.attempts(job.id);
    const last = attempts.at(-1);
    const spans: JobSpan[] = [];
    for (const a of attempts) {
      const t = a.trace as { spans?: JobSpan[] } | undefined;
      for (const s of t?.spans ?? [])
        spans.push({ ...s, args: { ...s.args, agent: a.agent, attempt: a.attempt } });
    }
    return buildJobTrace(
      job,
      { tasks: [], transfers: [], spans, devices: new Set<string>(), dropped: 0 },
      last ? { placement: `agent ${last.agent}` } : {},
    );
  }

  close(): void {
    this.closed = true;
  }
}
