/** Health, metrics, devices, live stats and the caller's tenant (the job type catalogue is in jobs.ts). */
import type { FastifyInstance } from 'fastify';
import type { ServiceParts } from '../../parts.js';
import { tenantOf } from '../auth.js';
import { EXAMPLE_TENANT } from './admin.js';

const EXAMPLE_DEVICE = {
  id: 'cpu0',
  kind: 'cpu',
  name: 'AMD EPYC (2 threads)',
  memoryBytes: 8589934592,
  memoryUsed: 1048576,
  utilization: 0.42,
  busySeconds: 12.5,
  peakFlops: { f32: 98000000000 },
};

const DEVICE_SCHEMA = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    kind: { type: 'string' },
    name: { type: 'string' },
    memoryBytes: { type: 'number' },
    memoryUsed: { type: 'number' },
    utilization: { type: 'number' },
    busySeconds: { type: 'number' },
    peakFlops: { type: 'object', additionalProperties: { type: 'number' } },
  },
} as const;

/** What the load shedder measures (runner/load-shedder.ts): no tenant names, so public like the rest. */
const LOAD_SCHEMA = {
  type: 'object',
  properties: {
    shedding: { type: 'boolean' },
    loopDelayMs: { type: 'number' },
    drainPerSecond: { type: 'number' },
    backlog: { type: 'integer' },
    backlogBudget: { type: 'integer' },
    expectedWaitSeconds: { type: ['number', 'null'] },
    inFlight: { type: 'integer' },
    refused: { type: 'integer' },
  },
} as const;

/** `/healthz`'s answer: built from memory only (no database, no runtime call). */
export function healthAnswer(s: ServiceParts): { status: 200 | 503; body: Record<string, unknown> } {
  const life = s.lifecycle();
  const draining = life.state === 'draining';
  // 503 while draining, so a load balancer stops sending work to a process about to restart.
  return {
    status: draining ? 503 : 200,
    body: {
      status: draining ? 'draining' : 'ok',
      uptimeSeconds: (Date.now() - s.startedAt) / 1000,
      // Queued includes submissions committed whose group still waits for its sync (store/wal-sync.ts).
      queued: s.dispatcher.queue.size + s.submitter.syncing,
      running: s.dispatcher.runningCount,
      runtime: s.runtimeStatus().state,
      ...(life.reason ? { reason: life.reason } : {}),
      ...(life.devicesLost.length ? { devicesLost: life.devicesLost } : {}),
      // degraded while writes fail (disk full) or finished jobs' outcomes wait to be stored
      store: s.storeHealth.view(),
      load: s.shedder.snapshot(),
    },
  };
}

export function systemRoutes(s: ServiceParts) {
  return async function (app: FastifyInstance): Promise<void> {
    const health = {
      type: 'object',
      examples: [{ status: 'ok', uptimeSeconds: 42.1, queued: 3, running: 1, runtime: 'ready' }],
      properties: {
        status: { type: 'string', enum: ['ok', 'draining'] },
        uptimeSeconds: { type: 'number' },
        queued: { type: 'integer' },
        running: { type: 'integer' },
        runtime: { type: 'string', enum: ['opening', 'ready', 'unavailable'] },
        reason: { type: 'string' },
        devicesLost: { type: 'array', items: { type: 'string' } },
        store: {
          type: 'object',
          properties: {
            state: { type: 'string', enum: ['ok', 'degraded'] },
            pendingOutcomes: { type: 'integer' },
            lastError: { type: ['string', 'null'] },
            lastErrorAt: { type: ['string', 'null'] },
          },
        },
        load: LOAD_SCHEMA,
      },
    } as const;
    // Answered from memory only: no database, no runtime call, so it stays fast while jobs compute. Over
    // a socket a plain `GET /healthz` is answered before Fastify routes it (http/fast-health.ts); this
    // route serves the rest (inject, HEAD, a query string) and documents it.
    app.get(
      '/healthz',
      {
        schema: {
          operationId: 'getHealth',
          summary: 'Liveness and a few counters; 503 while draining for a restart after a device was lost',
          tags: ['system'],
          response: { 200: health, 503: health },
        },
      },
      async (_req, reply) => {
        const { status, body } = healthAnswer(s);
        return reply.code(status).send(body);
      },
    );

    // Private: queue depth and running jobs carry tenant names. Prometheus scrapes with an admin key as
    // its bearer token, or from the keyless listener of TANDEM_METRICS_ADDR (obs/metrics-server.ts).
    app.get(
      '/metrics',
      {
        config: { admin: true },
        schema: {
          operationId: 'getMetrics',
          summary: 'Prometheus metrics (text format; admin key, or the separate metrics listener)',
          tags: ['system'],
          produces: ['text/plain'],
          response: { 200: { type: 'string', examples: ['tandem_jobs_submitted_total{type="gemm"} 12\n'] } },
        },
      },
      async (_req, reply) => {
        const text = await s.metrics.registry.metrics();
        return reply.type(s.metrics.registry.contentType).send(text);
      },
    );

    app.get(
      '/v1/devices',
      {
        schema: {
          operationId: 'listDevices',
          summary: 'Devices with live utilization and memory, and every backend with its status',
          tags: ['system'],
          response: {
            200: {
              type: 'object',
              examples: [
                {
                  devices: [EXAMPLE_DEVICE],
                  backends: [{ kind: 'cpu', available: true, reason: null }],
                  runtime: { available: true, reason: null },
                },
              ],
              properties: {
                devices: { type: 'array', items: DEVICE_SCHEMA },
                backends: {
                  type: 'array',
                  items: {
                    type: 'object',
                    properties: {
                      kind: { type: 'string' },
                      available: { type: 'boolean' },
                      reason: { type: ['string', 'null'] },
                    },
                  },
                },
                runtime: {
                  type: 'object',
                  properties: { available: { type: 'boolean' }, reason: { type: ['string', 'null'] } },
                },
              },
            },
          },
        },
      },
      async () => ({
        devices: s.devices(),
        backends: (s.runtime()?.backends ?? []).map((b) => ({
          kind: b.kind,
          available: b.available,
          reason: b.reason ?? null,
        })),
        runtime: s.runtimeStatus(),
      }),
    );

    app.get(
      '/v1/stats',
      {
        schema: {
          operationId: 'getStats',
          summary:
            "Live figures for dashboards: devices, queue depth by tenant, running jobs (a tenant's own; every tenant's for an admin)",
          tags: ['system'],
          response: {
            200: {
              type: 'object',
              examples: [
                {
                  time: 1796284800000,
                  devices: [EXAMPLE_DEVICE],
                  queued: 3,
                  running: 1,
                  queue: [{ tenant: 'alice', priority: 0, queued: 3 }],
                },
              ],
              properties: {
                time: { type: 'number' },
                devices: { type: 'array', items: DEVICE_SCHEMA },
                queued: { type: 'integer' },
                running: { type: 'integer' },
                queue: {
                  type: 'array',
                  items: {
                    type: 'object',
                    properties: {
                      tenant: { type: 'string' },
                      priority: { type: 'integer' },
                      queued: { type: 'integer' },
                    },
                  },
                },
              },
            },
          },
        },
      },
      async (req) => {
        // A tenant sees its own queue and counts; an admin sees every tenant's.
        const caller = tenantOf(req);
        const own = caller.role === 'admin' ? null : caller.id;
        const queue: { tenant: string; priority: number; queued: number }[] = [];
        let queued = 0;
        for (const [t, byPrio] of s.dispatcher.queue.depthByTenantAndPriority()) {
          if (own !== null && t !== own) continue;
          for (const [priority, n] of byPrio) {
            queue.push({ tenant: s.tenants.get(t)?.name ?? t, priority, queued: n });
            queued += n;
          }
        }
        return {
          time: Date.now(),
          devices: s.devices(),
          queued: own === null ? s.dispatcher.queue.size : queued,
          running: own === null ? s.dispatcher.runningCount : (s.dispatcher.runningByTenant().get(own) ?? 0),
          queue,
        };
      },
    );

    app.get(
      '/v1/whoami',
      {
        schema: {
          operationId: 'whoami',
          summary: "The caller's tenant, role and quotas",
          tags: ['tenants'],
          response: {
            200: {
              type: 'object',
              examples: [EXAMPLE_TENANT],
              properties: {
                id: { type: 'string' },
                name: { type: 'string' },
                role: { type: 'string', enum: ['admin', 'user'] },
                weight: { type: 'number' },
                maxConcurrentJobs: { type: 'integer' },
                maxDeviceMemoryBytes: { type: 'number' },
                maxQueuedJobs: { type: 'integer' },
                maxTimeoutSeconds: { type: 'number' },
                createdAt: { type: 'number', description: 'epoch milliseconds' },
              },
            },
          },
        },
      },
      async (req) => tenantOf(req),
    );
  };
}
