/**
 * The load shedder at the front of the submit path: one onRequest hook, after authentication and before
 * the body is read, so a refused submission costs only its headers (no JSON parse, no validation, no
 * commit). Refusals are 429 TANDEM_ERR_OVERLOADED with Retry-After (see runner/load-shedder.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { TandemError, type ErrorCode } from '../../core/errors.js';
import type { Tenant } from '../auth/tenants.js';
import type { LoadShedder, Refusal } from '../runner/load-shedder.js';
import { keyFromRequest } from './auth.js';
import { sendError } from './errors.js';

/**
 * A cheap first look at the raw URL before `routeOptions` (a getter that builds an object per read, and
 * this hook sees every request, the infer lane's included): only a path that starts with /v1/jobs, or
 * one with percent-escapes (which the router decodes), can be routed to POST /v1/jobs.
 */
const mayRouteToJobs = (url: string | undefined): boolean =>
  url !== undefined && (url.startsWith('/v1/jobs') || url.includes('%'));

export function installLoadShedding(
  app: FastifyInstance,
  shedder: LoadShedder,
  onRefused: (code: ErrorCode) => void,
): void {
  if (!shedder.enabled) return;
  const admitted = new WeakSet<FastifyRequest>();
  // Callback-style hooks (no promise per request): every request passes through them.
  app.addHook('onRequest', (req, reply, done) => {
    if (req.method !== 'POST' || !mayRouteToJobs(req.raw.url) || req.routeOptions.url !== '/v1/jobs')
      return done();
    if (!req.tenant) return done();
    const refusal = shedder.admit(req.tenant.id);
    if (refusal) {
      onRefused('TANDEM_ERR_OVERLOADED');
      sendError(reply, overloaded(refusal));
      return;
    }
    const tenantId = req.tenant.id;
    admitted.add(req);
    shedder.submissionStarted();
    // 'close' fires once per response, answered or aborted, so the counts cannot leak.
    reply.raw.once('close', () => {
      if (admitted.delete(req)) shedder.handedOver(tenantId);
      shedder.submissionEnded();
    });
    done();
  });
  // Right before the handler, which hands the job to the submitter at once (it is then counted there).
  app.addHook('preHandler', (req, _reply, done) => {
    if (req.tenant && admitted.delete(req)) shedder.handedOver(req.tenant.id);
    done();
  });
}

/**
 * The refusal as an error without a stack trace: a 429 is an answer, not a fault, and capturing the
 * stack was 5 % of the main thread at 5x overload (most requests refused).
 */
export function overloaded(refusal: Refusal): TandemError {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new TandemError('TANDEM_ERR_OVERLOADED', refusal.message, {
      reason: refusal.reason,
      retryAfterSeconds: refusal.retryAfterSeconds,
      ...refusal.details,
    });
  } finally {
    Error.stackTraceLimit = limit;
  }
}

type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

const isSubmitPath = (url: string | undefined): boolean =>
  url === '/v1/jobs' || (url !== undefined && url.startsWith('/v1/jobs?'));

/**
 * While the shedder is refusing (a refusal in the last second), `POST /v1/jobs` is looked at before
 * Fastify routes it: a refused submission is answered 429 from the raw request (the same body and
 * Retry-After as the hook's), skipping Fastify's routing, request object, hooks and reply. At 5× the
 * sustainable rate most requests are refused, and that per-request cost was what kept `/healthz` p99
 * above 20 ms (bench/RESULTS.md). Anything unusual (no key, an unknown key, an admitted submission)
 * goes on to Fastify untouched, which authenticates, rate-limits and admits as before; only a refusal
 * is answered here, so the rest of the service sees no difference. Outside overload this costs one
 * property read per request.
 */
export function installEarlyRefusal(
  app: FastifyInstance,
  shedder: LoadShedder,
  authenticate: (key: string) => Tenant | null,
  onRefused: (code: ErrorCode) => void,
): void {
  if (!shedder.enabled) return;
  const server = app.server;
  const listeners = server.listeners('request') as RequestListener[];
  // Fastify attaches one listener; anything else is a layout this does not know: leave it alone.
  if (listeners.length !== 1) return;
  const fastify = listeners[0]!;
  server.removeListener('request', fastify);
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (shedder.refusingNow && req.method === 'POST' && isSubmitPath(req.url)) {
      const key = keyFromRequest(req);
      const tenant = key ? authenticate(key) : null;
      const refusal = tenant ? shedder.refuseEarly(tenant.id) : null;
      if (refusal) {
        onRefused('TANDEM_ERR_OVERLOADED');
        writeRefusal(res, refusal);
        return;
      }
    }
    fastify.call(server, req, res);
  });
}

/**
 * The hook's 429 written straight to the socket: the same body (`sendError`'s shape) and Retry-After,
 * built without a TandemError (no Error object, no message prefix to strip) and with the headers as one
 * flat list, since at 5x overload this runs for nearly every request.
 */
function writeRefusal(res: ServerResponse, refusal: Refusal): void {
  const body = JSON.stringify({
    error: {
      code: 'TANDEM_ERR_OVERLOADED',
      message: refusal.message,
      details: { reason: refusal.reason, retryAfterSeconds: refusal.retryAfterSeconds, ...refusal.details },
    },
  });
  res.writeHead(429, [
    'content-type',
    'application/json; charset=utf-8',
    'content-length',
    String(Buffer.byteLength(body)),
    'retry-after',
    String(refusal.retryAfterSeconds),
  ]);
  res.end(body);
}
