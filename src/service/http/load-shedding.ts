/**
 * The load shedder at the front of the submit path: one onRequest hook, after authentication and before
 * the body is read, so a refused submission costs only its headers (no JSON parse, no validation, no
 * commit). Refusals are 429 TANDEM_ERR_OVERLOADED with Retry-After (see runner/load-shedder.ts).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { TandemError, type ErrorCode } from '../../core/errors.js';
import type { LoadShedder, Refusal } from '../runner/load-shedder.js';
import { sendError } from './errors.js';

export function installLoadShedding(
  app: FastifyInstance,
  shedder: LoadShedder,
  onRefused: (code: ErrorCode) => void,
): void {
  if (!shedder.enabled) return;
  const admitted = new WeakSet<FastifyRequest>();
  app.addHook('onRequest', async (req, reply) => {
    if (req.method !== 'POST' || req.routeOptions.url !== '/v1/jobs' || !req.tenant) return;
    const refusal = shedder.admit(req.tenant.id);
    if (refusal) {
      onRefused('TANDEM_ERR_OVERLOADED');
      return sendError(reply, overloaded(refusal));
    }
    const tenantId = req.tenant.id;
    admitted.add(req);
    shedder.submissionStarted();
    // 'close' fires once per response, answered or aborted, so the counts cannot leak.
    reply.raw.once('close', () => {
      if (admitted.delete(req)) shedder.handedOver(tenantId);
      shedder.submissionEnded();
    });
  });
  // Right before the handler, which hands the job to the submitter at once (it is then counted there).
  app.addHook('preHandler', async (req) => {
    if (req.tenant && admitted.delete(req)) shedder.handedOver(req.tenant.id);
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
