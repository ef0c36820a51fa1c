/**
 * What every Tandem HTTP app shares (the single node in app.ts and the scaled-out control plane in
 * queue/control-plane.ts): strict validation, the catalogue's error shape, auth and rate limits, and
 * the OpenAPI document. Kept apart from app.ts so the control plane does not load the single node's
 * dispatcher and store.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { TandemError, type ErrorCode } from '../../core/errors.js';
import type { Tenant } from '../auth/tenants.js';
import type { ServiceConfig } from '../config.js';
import { installAuth, TokenBuckets } from './auth.js';
import { installBodyLimits } from './body-limits.js';
import { installErrorHandling, sendError, shorten } from './errors.js';
import { registerOpenApi, type OpenApiInfo } from './openapi.js';

export interface HttpAppOptions {
  readonly logLevel: ServiceConfig['logLevel'];
  readonly bodyLimitBytes: number;
  /** Slow clients are cut off: the whole request, the headers, an idle keep-alive connection. */
  readonly requestTimeoutMs: number;
  readonly headersTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  readonly rateLimitPerSec: number;
  readonly rateLimitBurst: number;
  readonly authenticate: (key: string) => Tenant | null;
  /** Counts each error answered, by code. */
  readonly onError: (code: ErrorCode) => void;
  readonly openapi: OpenApiInfo;
}

export async function createHttpApp(o: HttpAppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    // stderr, never stdout: `tandem serve --json` promises one JSON line per start on stdout.
    logger: o.logLevel === 'silent' ? false : { level: o.logLevel, stream: process.stderr },
    bodyLimit: o.bodyLimitBytes,
    // Slow clients (a header or a body byte at a time) are cut off; checked every second, not every 30.
    requestTimeout: o.requestTimeoutMs,
    keepAliveTimeout: o.keepAliveTimeoutMs,
    http: {
      headersTimeout: o.headersTimeoutMs,
      connectionsCheckingInterval: Math.min(1000, o.headersTimeoutMs),
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
      o.onError(code);
      // Fastify's message quotes the whole URL: name the problem, never echo a long path back.
      const why =
        code === 'TANDEM_ERR_SIZE'
          ? 'a path segment is longer than the limit'
          : shorten(error.message.replace(/'[^']*'/g, "'…'"));
      void sendError(reply, new TandemError(code, `the URL is not valid: ${why}`));
    },
    forceCloseConnections: true,
  });
  installErrorHandling(app, o.onError);
  installBodyLimits(app);
  installAuth(app, o.authenticate, new TokenBuckets(o.rateLimitPerSec, o.rateLimitBurst));
  await registerOpenApi(app, o.openapi);
  return app;
}
