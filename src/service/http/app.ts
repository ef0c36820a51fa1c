/**
 * The Fastify apps. `createHttpApp` is what every Tandem app shares (the single node here and the
 * scaled-out control plane in queue/control-plane.ts): strict validation, the catalogue's error shape,
 * auth and rate limits, the OpenAPI document. `buildApp` is the single node: the shared job routes over
 * the SQLite JobsApi, plus system, admin and dashboard routes.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import type { ErrorCode } from '../../core/errors.js';
import type { Tenant } from '../auth/tenants.js';
import { LocalJobsApi } from '../api/local-jobs-api.js';
import type { ServiceConfig } from '../config.js';
import type { ServiceParts } from '../service.js';
import { installAuth, TokenBuckets } from './auth.js';
import { TandemError } from '../../core/errors.js';
import { installErrorHandling, sendError } from './errors.js';
import { registerOpenApi, type OpenApiInfo } from './openapi.js';
import { adminRoutes } from './routes/admin.js';
import { dashboardRoutes } from './routes/dashboard.js';
import { jobRoutes } from './routes/jobs.js';
import { systemRoutes } from './routes/system.js';

export interface HttpAppOptions {
  readonly logLevel: ServiceConfig['logLevel'];
  readonly bodyLimitBytes: number;
  readonly rateLimitPerSec: number;
  readonly rateLimitBurst: number;
  readonly authenticate: (key: string) => Tenant | null;
  /** Counts each error answered, by code. */
  readonly onError: (code: ErrorCode) => void;
  readonly openapi: OpenApiInfo;
}

export async function createHttpApp(o: HttpAppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: o.logLevel === 'silent' ? false : { level: o.logLevel },
    bodyLimit: o.bodyLimitBytes,
    // Strict bodies: no type coercion, no silent removal of unknown fields; errors name the field.
    ajv: {
      customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: true, allErrors: false },
    },
    return503OnClosing: true,
    // Router-level rejections (malformed URL encoding, over-long path parameters) in the catalogue shape.
    frameworkErrors: (error, _req, reply) => {
      const code =
        error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'TANDEM_ERR_SIZE' : 'TANDEM_ERR_INVALID_ARGUMENT';
      o.onError(code);
      void sendError(reply, new TandemError(code, `the URL is not valid: ${error.message}`));
    },
    forceCloseConnections: true,
  });
  installErrorHandling(app, o.onError);
  installAuth(app, o.authenticate, new TokenBuckets(o.rateLimitPerSec, o.rateLimitBurst));
  await registerOpenApi(app, o.openapi);
  return app;
}

export async function buildApp(s: ServiceParts): Promise<FastifyInstance> {
  const app = await createHttpApp({
    logLevel: s.config.logLevel,
    bodyLimitBytes: s.config.bodyLimitBytes,
    rateLimitPerSec: s.config.rateLimitPerSec,
    rateLimitBurst: s.config.rateLimitBurst,
    authenticate: (key) => s.tenants.authenticate(key),
    onError: (code) => s.metrics.httpErrors.inc({ code }),
    openapi: { title: 'Tandem service', description: 'Jobs on pooled CPUs and GPUs (single node).' },
  });
  app.addHook('onResponse', async (req, reply) => {
    s.metrics.httpDuration.observe(
      { method: req.method, route: req.routeOptions.url ?? 'unmatched' },
      reply.elapsedTime / 1000,
    );
  });
  await app.register(systemRoutes(s));
  await app.register(jobRoutes(new LocalJobsApi(s)));
  await app.register(adminRoutes(s));
  await app.register(dashboardRoutes(s));
  return app;
}
