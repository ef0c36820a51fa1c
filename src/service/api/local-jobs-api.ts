/**
 * The single-node JobsApi: the SQLite store, the group-commit submitter and the in-process dispatcher.
 * The logic is what the job routes did before they were shared with the control plane.
 */
import { memoryEstimate } from '../jobs/job-type.js';
import { TandemError } from '../../core/errors.js';
import { buildJobTrace } from '../obs/job-trace.js';
import { resolveTimeoutMs } from '../runner/deadlines.js';
import { assertDevicePresent } from '../runner/device-presence.js';
import { isFinished, JobWaiters } from '../runner/job-waiters.js';
import type { ServiceParts } from '../parts.js';
import type { JobRecord, NewJob } from '../store/job-store.js';
import {
  requireResult,
  viewOf,
  visibleJob,
  type Caller,
  type JobsApi,
  type JobView,
  type SubmitRequest,
} from './jobs-api.js';

export class LocalJobsApi implements JobsApi {
  private readonly waiters: JobWaiters;

  constructor(private readonly s: ServiceParts) {
    this.waiters = new JobWaiters(s.dispatcher);
  }

  private view(j: JobRecord): JobView {
    return viewOf(j, this.s.tenants.get(j.tenantId)?.name ?? j.tenantId, this.s.dispatcher.live(j.id));
  }

  private own(caller: Caller, id: string): JobRecord {
    return visibleJob(caller, this.s.store.get(id), id);
  }

  types() {
    return this.s.registry.list();
  }

  jobType(name: string) {
    return this.s.registry.get(name);
  }

  async submit(tenant: Caller, req: SubmitRequest) {
    const s = this.s;
    const { type, parsed } = req;
    assertDevicePresent(
      type.requestedDevice?.(parsed),
      s.runtimeStatus(),
      s.runtime(),
      type.requestedDeviceCount?.(parsed) ?? 1,
    );
    const timeoutMs = resolveTimeoutMs(req.timeoutSeconds, type, tenant, s.config.defaultJobTimeoutSeconds);
    const memBytes = memoryEstimate(type, parsed);
    if (memBytes > tenant.maxDeviceMemoryBytes)
      throw new TandemError(
        'TANDEM_ERR_LIMIT',
        `the job needs ${memBytes} bytes of device memory; the tenant's quota is ${tenant.maxDeviceMemoryBytes}`,
        {
          memoryBytes: memBytes,
          quota: tenant.maxDeviceMemoryBytes,
        },
      );
    const queued = s.dispatcher.queue.countForTenant(tenant.id) + s.submitter.pendingFor(tenant.id);
    if (queued >= tenant.maxQueuedJobs)
      throw new TandemError(
        'TANDEM_ERR_QUOTA',
        `the tenant has ${queued} queued jobs (quota ${tenant.maxQueuedJobs})`,
        {
          queued,
          quota: tenant.maxQueuedJobs,
          retryAfterSeconds: 5,
        },
      );
    const job: NewJob = {
      tenantId: tenant.id,
      type: type.name,
      params: req.params,
      priority: req.priority,
      jobClass: type.jobClass(parsed),
      memBytes,
      idempotencyKey: req.idempotencyKey,
      timeoutMs,
    };
    const waitMs = req.waitMs;
    if (waitMs <= 0) {
      const out = await s.submitter.submit(job);
      if (!out.ok) throw out.error;
      return { created: out.created, job: this.view(out.job) };
    }
    // Held until the job finishes (a request/response compute call), or answered as it stands then.
    // It starts in its insert's transaction when the dispatcher has room; its waiter is registered
    // at the commit, before it can start. A duplicate submit (idempotency key) may name a finished job.
    let finished: Promise<JobRecord | null> | null = null;
    const out = await s.submitter.submit(job, {
      start: s.dispatcher.startAtInsert(job, parsed),
      accepted: (j) => {
        if (!isFinished(j)) finished = this.waiters.wait(j.id, waitMs);
      },
    });
    if (!out.ok) throw out.error;
    const id = out.job.id;
    const done = isFinished(out.job) ? out.job : await (finished ?? this.waiters.wait(id, waitMs));
    const final = done ?? s.store.get(id) ?? out.job;
    const inline = final.state === 'succeeded' && !final.resultFile ? { result: final.result } : {};
    return { created: out.created, job: this.view(final), ...inline };
  }

  async list(caller: Caller, q: Parameters<JobsApi['list']>[1]) {
    const s = this.s;
    let tenantId: string | null = caller.id;
    if (caller.role === 'admin') {
      if (!q.tenant || q.tenant === 'all') tenantId = null;
      else tenantId = s.tenants.byName(q.tenant)?.id ?? `unknown:${q.tenant}`;
    }
    const jobs = s.store.list({
      tenantId,
      state: q.state,
      type: q.type,
      limit: q.limit,
      beforeSeq: q.before === undefined ? undefined : Number(q.before),
    });
    const counted = q.total ? this.s.store.count({ tenantId, state: q.state, type: q.type }) : null;
    return {
      jobs: jobs.map((j) => this.view(j)),
      next: jobs.length === q.limit ? String(jobs.at(-1)!.seq) : null,
      ...(counted ? { total: counted.total, totalExact: counted.exact } : {}),
    };
  }

  async get(caller: Caller, id: string) {
    return this.view(this.own(caller, id));
  }

  async cancel(caller: Caller, id: string) {
    const job = this.own(caller, id);
    const outcome = this.s.dispatcher.cancel(job);
    return { outcome, job: this.view(this.s.store.get(job.id) ?? job) };
  }

  async result(caller: Caller, id: string) {
    const job = this.own(caller, id);
    requireResult(job);
    if (!job.resultFile) return { id: job.id, result: job.result };
    // Large results stream from their file without being parsed.
    const file = this.s.results.open(job.resultFile);
    return {
      id: job.id,
      stream: (async function* () {
        for await (const chunk of file) yield chunk as Buffer;
      })(),
    };
  }

  async trace(caller: Caller, id: string) {
    const s = this.s;
    const job = this.own(caller, id);
    const written = job.traceFile ? s.traces.read(job.traceFile) : null;
    if (written) return written;
    // Running, or its file was lost (a crash before the trace's batch was written): from the record.
    const live = s.dispatcher.live(job.id);
    return buildJobTrace(job, s.traces.events(job.id), live ? { placement: live.placement } : {});
  }

  close(): void {
    this.waiters.close();
  }
}
