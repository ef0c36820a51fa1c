/** Job routes: submit, list, get, cancel, result, trace. Every lookup is scoped to the caller's tenant. */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { TandemError } from '../../../core/errors.js';
import { buildJobTrace } from '../../obs/job-trace.js';
import type { ServiceParts } from '../../parts.js';
import type { JobRecord, JobState, NewJob } from '../../store/job-store.js';
import { memoryEstimate } from '../../jobs/job-type.js';
import { tenantOf } from '../auth.js';
import { resolveTimeoutMs } from '../../runner/deadlines.js';
import { isFinished, JobWaiters } from '../../runner/job-waiters.js';
import {
  JOB_ID_PARAMS,
  JOB_SCHEMA,
  LIST_QUERY_SCHEMA,
  SUBMIT_ANSWER_SCHEMA,
  SUBMIT_BODY_SCHEMA,
  SUBMIT_QUERY_SCHEMA,
} from '../schemas.js';
import { assertDevicePresent } from '../../runner/device-presence.js';

interface SubmitBody {
  type: string;
  params: Record<string, unknown>;
  priority: number;
  idempotencyKey?: string;
  timeoutSeconds?: number;
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export function jobView(s: ServiceParts, j: JobRecord) {
  const live = s.dispatcher.live(j.id);
  return {
    id: j.id,
    type: j.type,
    tenant: s.tenants.get(j.tenantId)?.name ?? j.tenantId,
    state: j.state,
    priority: j.priority,
    progress: live?.progress ?? j.progress,
    message: live?.message ?? j.message,
    params: j.params,
    attempt: j.attempt,
    jobClass: j.jobClass,
    memoryBytes: j.memBytes,
    // A running job: the devices its finished tasks ran on so far (the claim's placement target is not one).
    device: live ? live.device : j.device,
    placement: live?.placement ?? j.placement,
    idempotencyKey: j.idempotencyKey,
    cancelRequested: j.cancelRequested,
    createdAt: iso(j.createdAt)!,
    startedAt: iso(j.startedAt),
    finishedAt: iso(j.finishedAt),
    waitSeconds: j.startedAt === null ? null : (j.startedAt - j.createdAt) / 1000,
    runSeconds: j.startedAt === null ? null : ((j.finishedAt ?? Date.now()) - j.startedAt) / 1000,
    timeoutSeconds: j.timeoutMs == null ? null : j.timeoutMs / 1000,
    deadline: iso(j.deadlineAt ?? null),
    error: j.error,
    hasResult: j.state === 'succeeded',
  };
}

/** The job if the caller may see it; another tenant's job is indistinguishable from a missing one. */
function ownJob(s: ServiceParts, req: FastifyRequest, id: string): JobRecord {
  const t = tenantOf(req);
  const job = s.store.get(id);
  if (!job || (job.tenantId !== t.id && t.role !== 'admin'))
    throw new TandemError('TANDEM_ERR_NOT_FOUND', `no job ${id}`, { id });
  return job;
}

function validateParams(s: ServiceParts, req: FastifyRequest, body: SubmitBody) {
  if (!s.registry.has(body.type)) s.registry.get(body.type); // throws the catalogue's unknown-type error
  const type = s.registry.get(body.type);
  const validate = req.compileValidationSchema(type.paramsSchema);
  if (!validate(body.params)) {
    const issues = (validate.errors ?? []).slice(0, 10).map((e) => ({
      where: `params${e.instancePath}`,
      problem: e.message ?? 'is invalid',
      params: e.params,
    }));
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `${issues[0]?.where ?? 'params'} ${issues[0]?.problem ?? 'invalid'}`,
      {
        type: body.type,
        issues,
      },
    );
  }
  const parsed = type.parse(body.params);
  assertDevicePresent(type.requestedDevice?.(parsed), s.runtimeStatus(), s.runtime());
  return { type, parsed };
}

export function jobRoutes(s: ServiceParts) {
  return async function (app: FastifyInstance): Promise<void> {
    const waiters = new JobWaiters(s.dispatcher);
    app.addHook('onClose', () => waiters.close());
    app.post<{ Body: SubmitBody; Querystring: { wait?: string } }>(
      '/v1/jobs',
      {
        schema: {
          summary:
            'Submit a job (durable once answered). Idempotency-Key header or body field de-duplicates. ' +
            '?wait=s holds the answer until the job has finished (at most s seconds) and includes an inline result.',
          tags: ['jobs'],
          body: SUBMIT_BODY_SCHEMA,
          querystring: SUBMIT_QUERY_SCHEMA,
          response: { 200: SUBMIT_ANSWER_SCHEMA, 202: SUBMIT_ANSWER_SCHEMA },
        },
      },
      async (req, reply) => {
        const tenant = tenantOf(req);
        const body = req.body;
        const header = req.headers['idempotency-key'];
        const idem =
          body.idempotencyKey ??
          (typeof header === 'string' && header.length > 0 ? header.slice(0, 128) : null);
        const { type, parsed } = validateParams(s, req, body);
        const timeoutMs = resolveTimeoutMs(
          body.timeoutSeconds,
          type,
          tenant,
          s.config.defaultJobTimeoutSeconds,
        );
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
          params: body.params,
          priority: body.priority,
          jobClass: type.jobClass(parsed),
          memBytes,
          idempotencyKey: idem,
          timeoutMs,
        };
        const waitMs = Number(req.query.wait ?? 0) * 1000;
        if (waitMs <= 0) {
          const out = await s.submitter.submit(job);
          if (!out.ok) throw out.error;
          return reply.code(out.created ? 202 : 200).send(jobView(s, out.job));
        }
        // Held until the job finishes (a request/response compute call), or answered as it stands then.
        // It starts in its insert's transaction when the dispatcher has room; its waiter is registered
        // at the commit, before it can start. A duplicate submit (idempotency key) may name a finished job.
        let finished: Promise<JobRecord | null> | null = null;
        const out = await s.submitter.submit(job, {
          start: s.dispatcher.startAtInsert(job, parsed),
          accepted: (j) => {
            if (!isFinished(j)) finished = waiters.wait(j.id, waitMs);
          },
        });
        if (!out.ok) throw out.error;
        const id = out.job.id;
        const done = isFinished(out.job) ? out.job : await (finished ?? waiters.wait(id, waitMs));
        const final = done ?? s.store.get(id) ?? out.job;
        const view = jobView(s, final);
        const inline = final.state === 'succeeded' && !final.resultFile ? { result: final.result } : {};
        return reply.code(out.created ? 202 : 200).send({ ...view, ...inline });
      },
    );

    app.get<{
      Querystring: {
        state?: JobState;
        type?: string;
        limit?: string;
        before?: string;
        tenant?: string;
        total?: 'true' | 'false';
      };
    }>(
      '/v1/jobs',
      {
        schema: {
          summary:
            'List jobs, newest first, filtered by state, type and (admins) tenant; `next` is the cursor ' +
            '(?before=) of the following page; with ?total=true, `total` is how many match (counted up to 10000: ' +
            '`totalExact` false beyond)',
          tags: ['jobs'],
          querystring: LIST_QUERY_SCHEMA,
          response: {
            200: {
              type: 'object',
              properties: {
                jobs: { type: 'array', items: JOB_SCHEMA },
                next: { type: ['string', 'null'] },
                total: { type: 'integer' },
                totalExact: { type: 'boolean' },
              },
            },
          },
        },
      },
      async (req) => {
        const t = tenantOf(req);
        const q = req.query;
        const limit = Math.min(1000, Math.max(1, Number(q.limit ?? 50)));
        let tenantId: string | null = t.id;
        if (t.role === 'admin') {
          if (!q.tenant || q.tenant === 'all') tenantId = null;
          else tenantId = s.tenants.byName(q.tenant)?.id ?? `unknown:${q.tenant}`;
        }
        const filter = { tenantId, state: q.state, type: q.type };
        const jobs = s.store.list({
          ...filter,
          limit,
          beforeSeq: q.before === undefined ? undefined : Number(q.before),
        });
        const counted = q.total === 'true' ? s.store.count(filter) : null;
        return {
          jobs: jobs.map((j) => jobView(s, j)),
          next: jobs.length === limit ? String(jobs.at(-1)!.seq) : null,
          ...(counted ? { total: counted.total, totalExact: counted.exact } : {}),
        };
      },
    );

    app.get<{ Params: { id: string } }>(
      '/v1/jobs/:id',
      {
        schema: {
          summary: 'A job with its state and progress',
          tags: ['jobs'],
          params: JOB_ID_PARAMS,
          response: { 200: JOB_SCHEMA },
        },
      },
      async (req) => jobView(s, ownJob(s, req, req.params.id)),
    );

    app.post<{ Params: { id: string } }>(
      '/v1/jobs/:id/cancel',
      {
        schema: {
          summary: 'Cancel a job: a queued one at once, a running one at its next cancellation point',
          tags: ['jobs'],
          params: JOB_ID_PARAMS,
          response: {
            200: {
              type: 'object',
              properties: {
                outcome: { type: 'string', enum: ['cancelled', 'cancelling', 'final'] },
                job: JOB_SCHEMA,
              },
            },
          },
        },
      },
      async (req) => {
        const job = ownJob(s, req, req.params.id);
        const outcome = s.dispatcher.cancel(job);
        return { outcome, job: jobView(s, s.store.get(job.id) ?? job) };
      },
    );

    app.get<{ Params: { id: string } }>(
      '/v1/jobs/:id/result',
      {
        schema: {
          summary: "A succeeded job's result: { id, result }",
          tags: ['jobs'],
          params: JOB_ID_PARAMS,
          response: {
            200: { type: 'object', properties: { id: { type: 'string' }, result: {} } },
          },
        },
      },
      async (req, reply) => {
        const job = ownJob(s, req, req.params.id);
        if (job.state === 'queued' || job.state === 'running')
          throw new TandemError('TANDEM_ERR_NOT_READY', `job ${job.id} is ${job.state}`, {
            state: job.state,
            progress: job.progress,
          });
        if (job.state !== 'succeeded')
          throw new TandemError('TANDEM_ERR_CONFLICT', `job ${job.id} ${job.state}: it has no result`, {
            state: job.state,
            error: job.error,
          });
        if (!job.resultFile) return { id: job.id, result: job.result };
        // Large results stream from their file without being parsed.
        const file = s.results.open(job.resultFile);
        const body = Readable.from(
          (async function* () {
            yield `{"id":${JSON.stringify(job.id)},"result":`;
            for await (const chunk of file) yield chunk as Buffer;
            yield '}';
          })(),
        );
        return reply.type('application/json').send(body);
      },
    );

    app.get<{ Params: { id: string } }>(
      '/v1/jobs/:id/trace',
      {
        schema: {
          summary: "The job's timeline as Chrome Trace Event JSON (open in ui.perfetto.dev)",
          tags: ['jobs'],
          params: JOB_ID_PARAMS,
          response: { 200: { type: 'object', additionalProperties: true } },
        },
      },
      async (req, reply) => {
        const job = ownJob(s, req, req.params.id);
        void reply.header('content-disposition', `inline; filename="${job.id}.trace.json"`);
        const written = job.traceFile ? s.traces.read(job.traceFile) : null;
        if (written) return written;
        // Running, or its file was lost (a crash before the trace's batch was written): from the record.
        const live = s.dispatcher.live(job.id);
        return buildJobTrace(job, s.traces.events(job.id), live ? { placement: live.placement } : {});
      },
    );
  };
}
