/**
 * The single node's Fastify app: the shared base (http-app.ts), then the job routes over the SQLite
 * JobsApi, and the system, admin and dashboard routes.
 */
import type { FastifyInstance } from 'fastify';
import { LocalJobsApi } from '../api/local-jobs-api.js';
import type { ServiceParts } from '../parts.js';
import { createHttpApp } from './http-app.js';
import { installFastHealth } from './fast-health.js';
import { installEarlyRefusal, installLoadShedding } from './load-shedding.js';
import { isTandemError } from '../../core/errors.js';
import { adminRoutes } from './routes/admin.js';
import { completionsRoutes } from './routes/completions.js';
import { dashboardRoutes } from './routes/dashboard.js';
import { historyRoutes } from './routes/history.js';
import { jobRoutes } from './routes/jobs.js';
import { modelRoutes } from './routes/models.js';
import { healthAnswer, systemRoutes } from './routes/system.js';

export async function buildApp(s: ServiceParts): Promise<FastifyInstance> {
  const app = await createHttpApp({
    logLevel: s.config.logLevel,
    bodyLimitBytes: s.config.bodyLimitBytes,
    requestTimeoutMs: s.config.requestTimeoutMs,
    headersTimeoutMs: s.config.headersTimeoutMs,
    keepAliveTimeoutMs: s.config.keepAliveTimeoutMs,
    rateLimitPerSec: s.config.rateLimitPerSec,
    rateLimitBurst: s.config.rateLimitBurst,
    authenticate: (key) => s.tenants.authenticate(key),
    onError: (code) => s.metrics.httpErrors.inc({ code }),
    openapi: { title: 'Tandem service', description: 'Jobs on pooled CPUs and GPUs (single node).' },
  });
  // Callback style (no promise per response), one label object per method and route made once.
  // Bounded: routes are the registered patterns (or 'unmatched'), methods the parser's known ones.
  const durationLabels = new Map<string, Map<string, { method: string; route: string }>>();
  app.addHook('onResponse', (req, reply, done) => {
    const route = req.routeOptions.url ?? 'unmatched';
    let byMethod = durationLabels.get(route);
    if (byMethod === undefined) durationLabels.set(route, (byMethod = new Map()));
    let labels = byMethod.get(req.method);
    if (labels === undefined) byMethod.set(req.method, (labels = { method: req.method, route }));
    s.metrics.httpDuration.observe(labels, reply.elapsedTime / 1000);
    done();
  });
  // After auth (it needs the tenant), before any body is read.
  installLoadShedding(app, s.shedder, (code) => s.metrics.httpErrors.inc({ code }));
  installEarlyRefusal(
    app,
    s.shedder,
    (key) => s.tenants.authenticate(key),
    (code) => s.metrics.httpErrors.inc({ code }),
  );
  // Outermost: a probe is answered before the early refusal's check and before Fastify.
  installFastHealth(
    app,
    () => healthAnswer(s),
    (seconds) => s.metrics.httpDuration.observe({ method: 'GET', route: '/healthz' }, seconds),
  );
  await app.register(systemRoutes(s));
  await app.register(jobRoutes(new LocalJobsApi(s)));
  await app.register(adminRoutes(s));
  await app.register(historyRoutes(s.history));
  await app.register(modelRoutes(s.models));
  // OpenAI's /v1/completions over the same repository: a name's newest version that loads.
  await app.register(
    completionsRoutes({
      lookup: async (name) => {
        try {
          return (await s.models.ready(name)).model ?? undefined;
        } catch (e) {
          if (isTandemError(e, 'TANDEM_ERR_NOT_FOUND')) return undefined;
          throw e;
        }
      },
    }),
  );
  await app.register(dashboardRoutes(s));
  return app;
}
