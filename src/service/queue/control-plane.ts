/**
 * The scaled-out control plane (`tandem serve --queue redis://... --pg postgres://...`): a stateless HTTP
 * API over the PostgreSQL job store and the BullMQ queue; replicas scale independently of the agents.
 * Submit stores the job first (acknowledged = durable), then places it (queue lane of its device class,
 * or held with a reason when no live agent could fit it). A reconciler re-places held jobs and re-adds
 * queued ones the queue may have lost (Redis outage, a submit that died between the two writes): the
 * queue dedups by job id and agents skip jobs the store says are final, so re-adding is always safe.
 * Keys: `tenant=key` pairs from the configuration (TANDEM_API_KEYS), shared by all replicas.
 */
import type { FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { TandemError } from '../../core/errors.js';
import { RedisAgentRegistry } from './heartbeat.js';
import type { Tenant } from '../auth/tenants.js';
import { registerAutoscaleMetrics } from '../autoscale/metrics.js';
import { DEFAULT_POLICY, ScaleSignal, type ClassSignal } from '../autoscale/signal.js';
import { DEFAULT_CONFIG, type HardwareRule, type ServiceConfig } from '../config.js';
import { createHttpApp } from '../http/http-app.js';
import { tenantOf } from '../http/auth.js';
import { jobRoutes } from '../http/routes/jobs.js';
import type { JobTypeRegistry } from '../jobs/registry.js';
import { HELD_PREFIX, type JobStoreApi } from '../store/store.js';
import type { BullQueue } from './bullmq-queue.js';
import { deviceClassFromRules, placeJobs, releaseHeld, type PlaceDeps } from './placement.js';
import { ScaledJobsApi } from './scaled-jobs-api.js';

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
  /** Per-tenant rate limit and the quotas control-plane tenants get (defaults: the service's). */
  readonly config?: Partial<
    Pick<
      ServiceConfig,
      | 'rateLimitPerSec'
      | 'rateLimitBurst'
      | 'quotas'
      | 'logLevel'
      | 'requestTimeoutMs'
      | 'headersTimeoutMs'
      | 'keepAliveTimeoutMs'
    >
  >;
}

export interface ControlPlane {
  readonly app: FastifyInstance;
  close(): Promise<void>;
}

/** Control-plane tenants come from the key list: users with the configured default quotas. */
function tenantsFromKeys(o: ControlPlaneOptions): Map<string, Tenant> {
  const q = o.config?.quotas;
  const byKey = new Map<string, Tenant>();
  for (const [key, id] of o.keys)
    byKey.set(key, {
      id,
      name: id,
      role: 'user',
      weight: 1,
      maxConcurrentJobs: q?.maxConcurrentJobs ?? 1_000_000,
      maxDeviceMemoryBytes: q?.maxDeviceMemoryBytes ?? Number.MAX_SAFE_INTEGER,
      maxQueuedJobs: q?.maxQueuedJobs ?? 1_000_000,
      maxTimeoutSeconds: q?.maxTimeoutSeconds ?? 24 * 3600,
      createdAt: 0,
    });
  return byKey;
}

export async function buildControlPlane(o: ControlPlaneOptions): Promise<ControlPlane> {
  const tenants = tenantsFromKeys(o);
  const app = await createHttpApp({
    logLevel: o.config?.logLevel ?? 'silent',
    bodyLimitBytes: o.bodyLimitBytes,
    requestTimeoutMs: o.config?.requestTimeoutMs ?? DEFAULT_CONFIG.requestTimeoutMs,
    headersTimeoutMs: o.config?.headersTimeoutMs ?? DEFAULT_CONFIG.headersTimeoutMs,
    keepAliveTimeoutMs: o.config?.keepAliveTimeoutMs ?? DEFAULT_CONFIG.keepAliveTimeoutMs,
    rateLimitPerSec: o.config?.rateLimitPerSec ?? 1_000_000,
    rateLimitBurst: o.config?.rateLimitBurst ?? 1_000_000,
    authenticate: (key) => tenants.get(key) ?? null,
    onError: () => undefined,
    openapi: {
      title: 'Tandem control plane',
      description: 'Jobs on pooled CPUs and GPUs (scaled out: PostgreSQL store, BullMQ queue, agents).',
    },
  });
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

  app.get(
    '/healthz',
    {
      schema: {
        operationId: 'getHealth',
        summary: 'Liveness of this control-plane replica',
        tags: ['system'],
        response: {
          200: {
            type: 'object',
            examples: [{ ok: true, mode: 'scaled-out', queue: 'bullmq', store: 'postgresql' }],
            properties: {
              ok: { type: 'boolean' },
              mode: { type: 'string', enum: ['scaled-out'] },
              queue: { type: 'string' },
              store: { type: 'string' },
            },
          },
        },
      },
    },
    async () => ({ ok: true, mode: 'scaled-out', queue: o.queue.kind, store: 'postgresql' }),
  );
  app.get(
    '/metrics',
    {
      schema: {
        operationId: 'getMetrics',
        summary: 'Prometheus metrics: the autoscaling signal (text format)',
        tags: ['system'],
        produces: ['text/plain'],
        response: {
          200: { type: 'string', examples: ['tandem_autoscale_desired_agents{device_class="cpu"} 2\n'] },
        },
      },
    },
    async (_req, reply) => reply.type(metrics.contentType).send(await metrics.metrics()),
  );
  await app.register(jobRoutes(new ScaledJobsApi({ store: o.store, registry: o.registry, placeDeps })));
  app.get(
    '/v1/agents',
    {
      schema: {
        operationId: 'listAgents',
        summary: 'Live agents (heartbeats): devices, capacity, running jobs',
        tags: ['scale'],
        response: {
          200: {
            type: 'object',
            examples: [{ agents: [{ name: 'node-a', deviceClasses: ['cpu'], running: 1, capacity: 8 }] }],
            properties: { agents: { type: 'array', items: { type: 'object', additionalProperties: true } } },
          },
        },
      },
    },
    async (req) => {
      tenantOf(req);
      return { agents: await agents.list() };
    },
  );
  app.get(
    '/v1/autoscale',
    {
      schema: {
        operationId: 'getAutoscaleSignal',
        summary: 'Desired agents per device class (the signal KEDA scales on)',
        tags: ['scale'],
        response: {
          200: {
            type: 'object',
            examples: [{ classes: [{ deviceClass: 'cpu', desired: 2, agents: 1 }] }],
            properties: { classes: { type: 'array', items: { type: 'object', additionalProperties: true } } },
          },
        },
      },
    },
    async (req) => {
      tenantOf(req);
      return { classes: await currentSignal() };
    },
  );

  // A cancel asked of a running job whose agent has died since: no agent will read it, and a
  // re-delivery skips a job with a cancel requested, so the reconciler commits the cancel.
  const cancelOrphans = async (d: PlaceDeps): Promise<void> => {
    const live = new Set(d.agents.map((a) => a.name));
    const running = await o.store.list({ tenantId: null, state: 'running', limit: 1000 });
    for (const j of running.filter((x) => x.cancelRequested)) {
      const last = (await o.store.attempts(j.id)).at(-1);
      if (!last || live.has(last.agent)) continue;
      await o.store.finish(j.id, j.attempt, {
        state: 'cancelled',
        error: {
          code: 'TANDEM_ERR_CANCELLED',
          message: `cancelled (its agent ${last.agent} is gone)`,
          details: { agent: last.agent },
        },
      });
    }
  };

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
      await cancelOrphans(d);
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
