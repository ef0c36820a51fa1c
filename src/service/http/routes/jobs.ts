/**
 * Job routes: submit, list, get, cancel, result, trace and the job type catalogue. One plugin, registered
 * by the single-node app and by the scaled-out control plane alike: it talks to the JobsApi contract
 * only (api/jobs-api.ts), so both topologies answer the same paths with the same schemas and errors.
 * Every lookup is scoped to the caller's tenant (inside the api).
 */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { TandemError } from '../../../core/errors.js';
import type { JobsApi } from '../../api/jobs-api.js';
import type { JobState } from '../../store/job-store.js';
import { tenantOf } from '../auth.js';
import {
  CANCEL_ANSWER_SCHEMA,
  JOB_ID_PARAMS,
  JOB_LIST_SCHEMA,
  JOB_SCHEMA,
  JOB_TYPES_SCHEMA,
  LIST_QUERY_SCHEMA,
  RESULT_SCHEMA,
  SUBMIT_ANSWER_SCHEMA,
  SUBMIT_BODY_SCHEMA,
  SUBMIT_QUERY_SCHEMA,
  TRACE_SCHEMA,
} from '../schemas.js';

interface SubmitBody {
  type: string;
  params: Record<string, unknown>;
  priority: number;
  idempotencyKey?: string;
  timeoutSeconds?: number;
}

/** Checks params against the type's own schema and `parse` (shared by both topologies). */
function validateParams(api: JobsApi, req: FastifyRequest, body: SubmitBody) {
  const type = api.jobType(body.type); // throws the catalogue's unknown-type error
  const validate = req.compileValidationSchema(type.paramsSchema);
  if (!validate(body.params)) {
    const issues = (validate.errors ?? []).slice(0, 10).map((e) => {
      // A typo ("temprature") names the field, as the workloads' own validators do.
      const extra = e.keyword === 'additionalProperties' ? String(e.params['additionalProperty']) : null;
      return {
        where: `params${e.instancePath}${extra === null ? '' : `/${extra}`}`,
        problem: extra === null ? (e.message ?? 'is invalid') : 'is not a known parameter',
        params: e.params,
      };
    });
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `${issues[0]?.where ?? 'params'} ${issues[0]?.problem ?? 'invalid'}`,
      {
        type: body.type,
        issues,
      },
    );
  }
  return { type, parsed: type.parse(body.params) };
}

export function jobRoutes(api: JobsApi) {
  return async function (app: FastifyInstance): Promise<void> {
    app.addHook('onClose', () => api.close());
    app.post<{ Body: SubmitBody; Querystring: { wait?: string } }>(
      '/v1/jobs',
      {
        schema: {
          operationId: 'submitJob',
          summary: 'Submit a job',
          description:
            'Durable once answered (202 new, 200 when an Idempotency-Key header or body field names an existing job). ' +
            '?wait=s holds the answer until the job has finished (at most s seconds) and includes an inline result.',
          tags: ['jobs'],
          body: SUBMIT_BODY_SCHEMA,
          querystring: SUBMIT_QUERY_SCHEMA,
          response: {
            200: { ...SUBMIT_ANSWER_SCHEMA, description: 'the existing job this idempotency key named' },
            202: { ...SUBMIT_ANSWER_SCHEMA, description: 'accepted (durable)' },
          },
        },
      },
      async (req, reply) => {
        const tenant = tenantOf(req);
        const body = req.body;
        const header = req.headers['idempotency-key'];
        const idem =
          body.idempotencyKey ??
          (typeof header === 'string' && header.length > 0 ? header.slice(0, 128) : null);
        const { type, parsed } = validateParams(api, req, body);
        const out = await api.submit(tenant, {
          type,
          parsed,
          params: body.params,
          priority: body.priority,
          idempotencyKey: idem,
          timeoutSeconds: body.timeoutSeconds,
          waitMs: Number(req.query.wait ?? 0) * 1000,
        });
        const answer = 'result' in out ? { ...out.job, result: out.result } : out.job;
        return reply.code(out.created ? 202 : 200).send(answer);
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
          operationId: 'listJobs',
          summary:
            'List jobs, newest first, filtered by state, type and (admins) tenant; `next` is the cursor ' +
            '(?before=) of the following page; with ?total=true, `total` is how many match (counted up to 10000: ' +
            '`totalExact` false beyond)',
          tags: ['jobs'],
          querystring: LIST_QUERY_SCHEMA,
          response: { 200: JOB_LIST_SCHEMA },
        },
      },
      async (req) => {
        const q = req.query;
        return api.list(tenantOf(req), {
          state: q.state,
          limit: Math.min(1000, Math.max(1, Number(q.limit ?? 50))),
          before: q.before,
          tenant: q.tenant,
          type: q.type,
          total: q.total === 'true',
        });
      },
    );

    app.get<{ Params: { id: string } }>(
      '/v1/jobs/:id',
      {
        schema: {
          operationId: 'getJob',
          summary: 'A job with its state and progress',
          tags: ['jobs'],
          params: JOB_ID_PARAMS,
          response: { 200: JOB_SCHEMA },
        },
      },
      async (req) => api.get(tenantOf(req), req.params.id),
    );

    const cancel = async (req: FastifyRequest<{ Params: { id: string } }>) =>
      api.cancel(tenantOf(req), req.params.id);
    app.post<{ Params: { id: string } }>(
      '/v1/jobs/:id/cancel',
      {
        schema: {
          operationId: 'cancelJob',
          summary: 'Cancel a job',
          description: 'A queued job at once, a running one at its next cancellation point.',
          tags: ['jobs'],
          params: JOB_ID_PARAMS,
          response: { 200: CANCEL_ANSWER_SCHEMA },
        },
      },
      cancel,
    );
    // The scaled-out control plane's original cancel path, kept for clients that use it.
    app.delete<{ Params: { id: string } }>(
      '/v1/jobs/:id',
      {
        schema: {
          operationId: 'deleteJob',
          summary: 'Cancel a job (alias of POST /v1/jobs/{id}/cancel)',
          tags: ['jobs'],
          deprecated: true,
          params: JOB_ID_PARAMS,
          response: { 200: CANCEL_ANSWER_SCHEMA },
        },
      },
      cancel,
    );

    app.get<{ Params: { id: string } }>(
      '/v1/jobs/:id/result',
      {
        schema: {
          operationId: 'getJobResult',
          summary: "A succeeded job's result",
          tags: ['jobs'],
          params: JOB_ID_PARAMS,
          response: { 200: RESULT_SCHEMA },
        },
      },
      async (req, reply: FastifyReply) => {
        const out = await api.result(tenantOf(req), req.params.id);
        if (out.stream === undefined) return { id: out.id, result: out.result };
        // Large results stream from their file without being parsed.
        const stream = out.stream;
        const body = Readable.from(
          (async function* () {
            yield `{"id":${JSON.stringify(out.id)},"result":`;
            yield* stream;
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
          operationId: 'getJobTrace',
          summary: "The job's timeline as Chrome Trace Event JSON (open in ui.perfetto.dev)",
          tags: ['jobs'],
          params: JOB_ID_PARAMS,
          response: { 200: TRACE_SCHEMA },
        },
      },
      async (req, reply) => {
        const trace = await api.trace(tenantOf(req), req.params.id);
        void reply.header('content-disposition', `inline; filename="${req.params.id}.trace.json"`);
        return trace;
      },
    );

    app.get(
      '/v1/job-types',
      {
        schema: {
          operationId: 'listJobTypes',
          summary: 'Job types with their parameter schemas (JSON Schema: types, ranges, defaults)',
          tags: ['jobs'],
          response: { 200: JOB_TYPES_SCHEMA },
        },
      },
      async () => ({
        types: api.types().map((t) => ({ name: t.name, description: t.description, params: t.paramsSchema })),
      }),
    );
  };
}
