/**
 * The scaled-out control plane (`tandem serve --queue redis://... --pg postgres://...`): a stateless HTTP
 * API over the PostgreSQL job store and the BullMQ queue; replicas scale independently of the agents.
 * Submit stores the job first (acknowledged = durable), then places it (queue lane of its device class,
 * or held with a reason when no live agent could fit it). A reconciler re-places held jobs and re-adds
 * queued ones the queue may have lost (Redis outage, a submit that died between the two writes): the
 * queue dedups by job id and agents skip jobs the store says are final, so re-adding is always safe.
 * That singleton work runs on one replica at a time, the holder of the leader lock (leader-duties.ts).
 * Admission sheds load as one node does (runner/load-shedder.ts), from the whole cluster's backlog as
 * PostgreSQL sees it (cluster-backlog.ts): 429 + Retry-After, per tenant by weight.
 * Keys: `tenant=key` pairs from the configuration (TANDEM_API_KEYS), shared by all replicas; weights
 * from TANDEM_TENANT_WEIGHTS (`tenant=weight`, default 1).
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
import { installEarlyRefusal, installLoadShedding } from '../http/load-shedding.js';
import { jobRoutes } from '../http/routes/jobs.js';
import type { JobTypeRegistry } from '../jobs/registry.js';
import { LoadShedder } from '../runner/load-shedder.js';
import type { JobStoreApi } from '../store/store.js';
import type { BullQueue } from './bullmq-queue.js';
import { ClusterBacklog, type ClusterLoadSource } from './cluster-backlog.js';
import { LeaderDuties } from './leader-duties.js';
import type { SingletonLock } from './leader-lock.js';
import { deviceClassFromRules, type PlaceDeps } from './placement.js';
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
  /** Tenant id → weight (its share of the backlog budget when shedding); absent: 1. */
  readonly weights?: ReadonlyMap<string, number>;
  /** Where the cluster's backlog is read (PostgreSQL: pgClusterLoadSource); absent: no load shedding. */
  readonly load?: ClusterLoadSource;
  /** The leader lock (PgAdvisoryLock); absent: this replica is the only one, always the leader. */
  readonly lock?: SingletonLock;
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
      | 'shed'
      | 'defaultJobTimeoutSeconds'
      | 'deadlineGraceMs'
    >
  >;
}

export interface ControlPlane {
  readonly app: FastifyInstance;
  /** This replica's singleton work and whether it holds the leader lock. */
  readonly duties: LeaderDuties;
  /** The admission shedder (null when no load source was given). */
  readonly shedder: LoadShedder | null;
  /** Reads the cluster's backlog now (tests; the timer does it every 100 ms). */
  pollLoad(): Promise<void>;
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
      weight: o.weights?.get(id) ?? 1,
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
  // Installed before the routes, after authentication (createHttpApp): refusals cost only headers.
  let backlog: ClusterBacklog | null = null;
  let shedder: LoadShedder | null = null;
  if (o.load) {
    const weightOf = (id: string): number => o.weights?.get(id) ?? 1;
    const cluster = (backlog = new ClusterBacklog(o.load, weightOf, (n) => shed.jobFinished(n)));
    const shed = (shedder = new LoadShedder(o.config?.shed ?? DEFAULT_CONFIG.shed, cluster));
    installLoadShedding(app, shed, () => undefined);
    installEarlyRefusal(
      app,
      shed,
      (key) => tenants.get(key) ?? null,
      () => undefined,
    );
    shed.start();
    cluster.start();
  }
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
            examples: [{ ok: true, mode: 'scaled-out', queue: 'bullmq', store: 'postgresql', leader: true }],
            properties: {
              ok: { type: 'boolean' },
              mode: { type: 'string', enum: ['scaled-out'] },
              queue: { type: 'string' },
              store: { type: 'string' },
              leader: {
                type: 'boolean',
                description: 'This replica holds the leader lock (reconciler, deadline backstop)',
              },
              load: {
                type: 'object',
                additionalProperties: true,
                description: 'Admission: shedding, loop delay, cluster drain rate, backlog, budget',
              },
            },
          },
        },
      },
    },
    async () => ({
      ok: true,
      mode: 'scaled-out',
      queue: o.queue.kind,
      store: 'postgresql',
      leader: duties.leader,
      ...(shedder ? { load: shedder.snapshot() } : {}),
    }),
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
  const api = new ScaledJobsApi({
    store: o.store,
    registry: o.registry,
    placeDeps,
    defaultJobTimeoutSeconds: o.config?.defaultJobTimeoutSeconds ?? DEFAULT_CONFIG.defaultJobTimeoutSeconds,
    ...(backlog ? { tracker: backlog } : {}),
  });
  await app.register(jobRoutes(api));
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

  const duties = new LeaderDuties({
    store: o.store,
    placeDeps,
    reconcileMs: o.reconcileMs,
    deadlineGraceMs: o.config?.deadlineGraceMs ?? DEFAULT_CONFIG.deadlineGraceMs,
    lock: o.lock ?? null,
  });
  duties.start();
  await app.ready();
  return {
    app,
    duties,
    shedder,
    pollLoad: async () => {
      await backlog?.poll();
      shedder?.tick();
    },
    async close() {
      backlog?.stop();
      shedder?.stop();
      await duties.stop();
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

/** Parses "tenant=weight,..." (TANDEM_TENANT_WEIGHTS) into tenant → weight (a positive number). */
export function parseTenantWeights(text: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const pair of text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const i = pair.indexOf('=');
    const w = Number(pair.slice(i + 1));
    if (i <= 0 || !(w > 0) || !Number.isFinite(w))
      throw new TandemError(
        'TANDEM_ERR_CONFIG',
        `TANDEM_TENANT_WEIGHTS entry "${pair.slice(0, 40)}" is not tenant=weight (a positive number)`,
      );
    m.set(pair.slice(0, i), w);
  }
  return m;
}
