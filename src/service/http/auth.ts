/**
 * Authentication (API key → tenant) and per-tenant rate limiting, as one onRequest hook on the API
 * (/v1/...) and on any other route marked `config.admin` (/metrics). Health, the OpenAPI document and
 * the dashboard's files are public.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { TandemError } from '../../core/errors.js';
import type { Tenant } from '../auth/tenants.js';
import { sendError } from './errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    tenant: Tenant | null;
  }
  interface FastifyContextConfig {
    admin?: boolean;
  }
}

/** Token bucket per tenant: `rate` tokens a second, at most `burst` saved up. */
export class TokenBuckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  constructor(
    private readonly rate: number,
    private readonly burst: number,
  ) {}

  /** 0 when allowed, else seconds until a token is available. */
  take(key: string, now = performance.now()): number {
    let b = this.buckets.get(key);
    if (!b) this.buckets.set(key, (b = { tokens: this.burst, at: now }));
    b.tokens = Math.min(this.burst, b.tokens + ((now - b.at) / 1000) * this.rate);
    b.at = now;
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return (1 - b.tokens) / this.rate;
  }
}

export function keyFromRequest(req: { readonly headers: IncomingHttpHeaders }): string | null {
  const auth = req.headers.authorization;
  if (typeof auth === 'string' && auth.startsWith('Bearer ')) return auth.slice(7).trim();
  const k = req.headers['x-api-key'];
  return typeof k === 'string' ? k.trim() : null;
}

/**
 * `authenticate` maps a key to its tenant: the tenant store on one node, the configured key list in the
 * scaled-out control plane; the routes behind it only ever see `req.tenant`.
 */
export function installAuth(
  app: FastifyInstance,
  authenticate: (key: string) => Tenant | null,
  limits: TokenBuckets,
): void {
  app.decorateRequest('tenant', null);
  // Callback style, not async: this runs on every API request, and an async hook costs a promise and a
  // microtask hop each time. A refusal answers here and does not call done (Fastify's early reply).
  app.addHook('onRequest', (req, reply, done) => {
    // routeOptions is a getter that builds a fresh object on every read: read it once.
    const route = req.routeOptions;
    const url = route.url;
    const cfg = route.config;
    if (url === undefined || (!url.startsWith('/v1/') && cfg.admin !== true)) return done();
    const key = keyFromRequest(req);
    if (!key) {
      sendError(
        reply,
        new TandemError('TANDEM_ERR_UNAUTHORIZED', 'an API key is required (Authorization: Bearer <key>)'),
      );
      return;
    }
    const tenant = authenticate(key);
    if (!tenant) {
      sendError(reply, new TandemError('TANDEM_ERR_UNAUTHORIZED', 'the API key is not valid'));
      return;
    }
    const wait = limits.take(tenant.id);
    if (wait > 0) {
      sendError(
        reply,
        new TandemError('TANDEM_ERR_RATE_LIMITED', 'too many requests for this tenant', {
          retryAfterSeconds: Math.ceil(wait),
        }),
      );
      return;
    }
    if (cfg.admin && tenant.role !== 'admin') {
      sendError(reply, new TandemError('TANDEM_ERR_FORBIDDEN', 'this needs an admin key'));
      return;
    }
    req.tenant = tenant;
    done();
  });
}

/** The authenticated tenant (routes that are not public always have one). */
export function tenantOf(req: FastifyRequest): Tenant {
  if (!req.tenant) throw new TandemError('TANDEM_ERR_UNAUTHORIZED', 'not authenticated');
  return req.tenant;
}
