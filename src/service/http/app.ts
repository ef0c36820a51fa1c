/**
 * The Fastify app: error mapping, auth and rate limits, then the route plugins. JSON schemas on every
 * route feed validation, fast serialization and the OpenAPI document.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import type { ServiceParts } from '../parts.js';
import { installAuth, TokenBuckets } from './auth.js';
import { installBodyLimits } from './body-limits.js';
import { TandemError } from '../../core/errors.js';
import { installErrorHandling, sendError, shorten } from './errors.js';
import { installLoadShedding } from './load-shedding.js';
import { collectOpenApi } from './openapi.js';
import { adminRoutes } from './routes/admin.js';
import { dashboardRoutes } from './routes/dashboard.js';
import { historyRoutes } from './routes/history.js';
import { jobRoutes } from './routes/jobs.js';
import { systemRoutes } from './routes/system.js';

export async function buildApp(s: ServiceParts): Promise<FastifyInstance> {
  const app = Fastify({
    // stderr, never stdout: `tandem serve --json` promises one JSON line per start on stdout.
    logger: s.config.logLevel === 'silent' ? false : { level: s.config.logLevel, stream: process.stderr },
    bodyLimit: s.config.bodyLimitBytes,
    // Slow clients (a header or a body byte at a time) are cut off; checked every second, not every 30.
    requestTimeout: s.config.requestTimeoutMs,
    keepAliveTimeout: s.config.keepAliveTimeoutMs,
    http: {
      headersTimeout: s.config.headersTimeoutMs,
      connectionsCheckingInterval: Math.min(1000, s.config.headersTimeoutMs),
    },
    // Strict bodies: no type coercion, no silent removal of unknown fields; errors name the field.
    ajv: {
      customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: true, allErrors: false },
    },
    return503OnClosing: true,
    // Router-level rejections (malformed URL encoding, over-long path parameters) in the catalogue shape.
    frameworkErrors: (error, _req, reply) => {
      const code =
        error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'TANDEM_ERR_SIZE' : 'TANDEM_ERR_INVALID_ARGUMENT';
      s.metrics.httpErrors.inc({ code });
      // Fastify's message quotes the whole URL: name the problem, never echo a long path back.
      const why =
        code === 'TANDEM_ERR_SIZE'
          ? 'a path segment is longer than the limit'
          : shorten(error.message.replace(/'[^']*'/g, "'…'"));
      void sendError(reply, new TandemError(code, `the URL is not valid: ${why}`));
    },
    forceCloseConnections: true,
  });
  installErrorHandling(app, (code) => s.metrics.httpErrors.inc({ code }));
  app.addHook('onResponse', async (req, reply) => {
    s.metrics.httpDuration.observe(
      { method: req.method, route: req.routeOptions.url ?? 'unmatched' },
      reply.elapsedTime / 1000,
    );
  });
  installAuth(app, s.tenants, new TokenBuckets(s.config.rateLimitPerSec, s.config.rateLimitBurst));
  // After auth (it needs the tenant), before any body is read.
  installLoadShedding(app, s.shedder, (code) => s.metrics.httpErrors.inc({ code }));
  installBodyLimits(app);
  const openapi = collectOpenApi(app);
  await app.register(systemRoutes(s, openapi));
  await app.register(jobRoutes(s));
  await app.register(adminRoutes(s));
  await app.register(historyRoutes(s.history));
  await app.register(dashboardRoutes(s));
  return app;
}
