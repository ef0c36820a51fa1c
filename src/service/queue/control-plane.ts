/**
 * The scaled-out control plane (`tandem serve --queue redis://... --pg postgres://...`): a stateless HTTP
 * API over the PostgreSQL job store and the BullMQ queue; replicas scale independently of the agents.
 * Submit stores the job first (acknowledged = durable), then places it (queue lane of its device class,
 * or held with a reason when no live agent could fit it). A reconciler re-places held jobs and re-adds
 * queued ones the queue may have lost (Redis outage, a submit that died between the two writes): the
 * queue dedups by job id and agents skip jobs the store says are final, so re-adding is always safe.
 * Keys: `tenant=key` pairs from the configuration (TANDEM_API_KEYS), shared by all replicas.
 */
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { Registry } from 'prom-client';
import { TandemError } from '../../core/errors.js';
import { RedisAgentRegistry } from './heartbeat.js';
import { registerAutoscaleMetrics } from '../autoscale/metrics.js';
import { DEFAULT_POLICY, ScaleSignal, type ClassSignal } from '../autoscale/signal.js';
import type { HardwareRule } from '../config.js';
import { installErrorHandling } from '../http/errors.js';
import { keyFromRequest } from '../http/auth.js';
import { memoryEstimate } from '../jobs/job-type.js';
import type { JobTypeRegistry } from '../jobs/registry.js';
import type { JobRecord, JobState } from '../store/job-store.js';
import { HELD_PREFIX, type JobStoreApi } from '../store/store.js';
import type { BullQueue } from './bullmq-queue.js';
import { deviceClassFromRules, placeJobs, releaseHeld, type PlaceDeps } from './placement.js';

export interface ControlPlaneOptions {
  readonly store: JobStoreApi;
  readonly queue: BullQueue;
  readonly registry: JobTypeRegistry;
  readonly prefix: string;
  readonly rules: readonly HardwareRule[];
  /** API key → tenant id. */
  readonly keys: ReadonlyMap<string, string>;
  readonly reconcileMs: number;
  readonly bodyLimitBytes: number;
}

interface SubmitBody {
  type: string;
  params?: Record<string, unknown>;
  priority?: number;
  idempotencyKey?: string;
}

const SUBMIT_SCHEMA = {
  type: 'object',
  required: ['type'],
  additionalProperties: false,
  properties: {
    type: { type: 'string', minLength: 1, maxLength: 32 },
    params: { type: 'object' },
    priority: { type: 'integer', minimum: -100, maximum: 100 },
    idempotencyKey: { type: 'string', minLength: 1, maxLength: 128 },
  },
} as const;

export interface ControlPlane {
  readonly app: FastifyInstance;
  close(): Promise<void>;
}

export async function buildControlPlane(o: ControlPlaneOptions): Promise<ControlPlane> {
  const app = Fastify({ logger: false, bodyLimit: o.bodyLimitBytes });
  const agents = new RedisAgentRegistry(o.queue.redis, o.prefix);
  const signal = new ScaleSignal(DEFAULT_POLICY);
  const deviceClassOf = deviceClassFromRules(o.rules);
  const placeDeps = async (): Promise<PlaceDeps> => ({
    agents: await agents.list(),
    store: o.store,
    queue: o.queue,
    deviceClassOf,
  });
  const metrics = new Registry();
  let latest: { at: number; value: readonly ClassSignal[] } = { at: 0, value: [] };
  const currentSignal = async (): Promise<readonly ClassSignal[]> => {
    if (Date.now() - latest.at > 500)
      latest = { at: Date.now(), value: signal.compute(await o.queue.counts(), await agents.list()) };
    return latest.value;
  };
  registerAutoscaleMetrics(metrics, currentSignal);
  installErrorHandling(app, () => undefined);

  const tenantOf = (req: FastifyRequest): string => {
    const key = keyFromRequest(req);
    const t = key ? o.keys.get(key) : undefined;
    if (!t) throw new TandemError('TANDEM_ERR_UNAUTHORIZED', 'missing or invalid API key');
    return t;
  };
  const view = (j: JobRecord) => ({
    id: j.id,
    type: j.type,
    state: j.state,
    priority: j.priority,
    progress: j.progress,
    message: j.message,
    held: j.state === 'queued' && j.message.startsWith(HELD_PREFIX),
    attempt: j.attempt,
    memoryBytes: j.memBytes,
    jobClass: j.jobClass,
    device: j.device,
    createdAt: new Date(j.createdAt).toISOString(),
    startedAt: j.startedAt === null ? null : new Date(j.startedAt).toISOString(),
    finishedAt: j.finishedAt === null ? null : new Date(j.finishedAt).toISOString(),
    error: j.error,
    result: j.state === 'succeeded' ? j.result : null,
  });
  const own = async (req: FastifyRequest, id: string): Promise<JobRecord> => {
    const t = tenantOf(req);
    const j = await o.store.get(id);
    if (!j || j.tenantId !== t) throw new TandemError('TANDEM_ERR_NOT_FOUND', `no job ${id}`, { id });
    return j;
  };

  app.get('/healthz', async () => ({
    ok: true,
    mode: 'scaled-out',
    queue: o.queue.kind,
    store: 'postgresql',
  }));
  app.get('/metrics', async (_req, reply) => reply.type(metrics.contentType).send(await metrics.metrics()));
  app.post<{ Body: SubmitBody }>('/v1/jobs', { schema: { body: SUBMIT_SCHEMA } }, async (req, reply) => {
    const tenantId = tenantOf(req);
    const type = o.registry.get(req.body.type);
    const raw = req.body.params ?? {};
    const validate = req.compileValidationSchema(type.paramsSchema);
    if (!validate(raw))
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `params ${validate.errors?.[0]?.message ?? 'invalid'}`,
        {
          issues: validate.errors ?? [],
        },
      );
    const parsed = type.parse(raw);
    const [out] = await o.store.insertMany([
      {
        tenantId,
        type: type.name,
        params: raw,
        priority: req.body.priority ?? 0,
        jobClass: type.jobClass(parsed),
        memBytes: memoryEstimate(type, parsed),
        idempotencyKey: req.body.idempotencyKey ?? null,
      },
    ]);
    if (!out || !out.ok)
      throw out?.error ?? new TandemError('TANDEM_ERR_INTERNAL', 'insert returned nothing');
    // Durable now. Placement failing (Redis away) is not the caller's problem: the reconciler retries.
    if (out.created) await placeJobs([out.job], await placeDeps()).catch(() => undefined);
    const now = (await o.store.get(out.job.id)) ?? out.job;
    return reply.code(out.created ? 201 : 200).send(view(now));
  });
  app.get<{ Params: { id: string } }>('/v1/jobs/:id', async (req) => {
    const j = await own(req, req.params.id);
    return { ...view(j), attempts: await o.store.attempts(j.id) };
  });
  app.get<{ Querystring: { state?: JobState; limit?: number } }>('/v1/jobs', async (req) => {
    const t = tenantOf(req);
    const limit = Math.min(1000, Math.max(1, Number(req.query.limit ?? 100)));
    return { jobs: (await o.store.list({ tenantId: t, state: req.query.state, limit })).map(view) };
  });
  app.delete<{ Params: { id: string } }>('/v1/jobs/:id', async (req) => {
    const j = await own(req, req.params.id);
    const ok = await o.store.cancelQueued(j.id);
    if (ok) await o.queue.cancel(j.id, deviceClassOf(j)).catch(() => false);
    return { id: j.id, cancelled: ok };
  });
  app.get('/v1/agents', async (req) => {
    tenantOf(req);
    return { agents: await agents.list() };
  });
  app.get('/v1/autoscale', async (req) => {
    tenantOf(req);
    return { classes: await currentSignal() };
  });

  let reconciling = false;
  const reconcile = async (): Promise<void> => {
    if (reconciling) return;
    reconciling = true;
    try {
      const d = await placeDeps();
      await releaseHeld(d);
      const cutoff = Date.now() - o.reconcileMs;
      const queued = await o.store.list({ tenantId: null, state: 'queued', limit: 1000 });
      const stale = queued.filter((j) => j.createdAt < cutoff && !j.message.startsWith(HELD_PREFIX));
      if (stale.length > 0) await placeJobs(stale, d);
    } catch {
      // Redis or PostgreSQL away: the next pass tries again
    } finally {
      reconciling = false;
    }
  };
  const timer = setInterval(() => void reconcile(), o.reconcileMs);
  await app.ready();
  return {
    app,
    async close() {
      clearInterval(timer);
      await app.close();
    },
  };
}

/** Parses "tenant=key,tenant2=key2" (TANDEM_API_KEYS) into key → tenant. */
export function parseApiKeys(text: string): Map<string, string> {
  const m = new Map<string, string>();
  for (const pair of text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const i = pair.indexOf('=');
    if (i <= 0 || i === pair.length - 1)
      throw new TandemError('TANDEM_ERR_CONFIG', `API key entry "${pair.slice(0, 20)}..." is not tenant=key`);
    m.set(pair.slice(i + 1), pair.slice(0, i));
  }
  return m;
}
