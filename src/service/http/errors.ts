/**
 * Every error leaves the service as `{ error: { code, message, details } }` with the catalogue's HTTP
 * status. Fastify's own errors (bad JSON, body too large, schema violations, unknown routes) are mapped
 * to stable TANDEM_ERR_ codes here, so clients never see a framework-specific shape.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  ERROR_CATALOGUE,
  TandemError,
  isTandemError,
  messageText,
  type ErrorCode,
} from '../../core/errors.js';

export const ERROR_BODY_SCHEMA = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message', 'details'],
      properties: {
        code: { type: 'string', enum: Object.keys(ERROR_CATALOGUE) },
        message: { type: 'string' },
        details: { type: 'object', additionalProperties: true },
      },
    },
  },
} as const;

interface ValidationIssue {
  instancePath?: string;
  message?: string;
  params?: unknown;
}

/** Turns anything thrown in a route into a TandemError. */
export function toTandemError(e: unknown): TandemError {
  if (isTandemError(e)) return e;
  const fe = e as Partial<FastifyError> & { validation?: ValidationIssue[]; validationContext?: string };
  if (fe.validation) {
    const issues = fe.validation.slice(0, 10).map((v) => ({
      where: `${fe.validationContext ?? 'body'}${v.instancePath ?? ''}`,
      problem: v.message ?? 'is invalid',
      ...(v.params && typeof v.params === 'object' ? { params: v.params } : {}),
    }));
    const first = issues[0];
    return new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      first ? `${first.where} ${first.problem}` : 'the request does not match its schema',
      { issues },
    );
  }
  switch (fe.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new TandemError(
        'TANDEM_ERR_MALFORMED_REQUEST',
        `the body is not valid JSON: ${fe.message ?? ''}`,
      );
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
    case 'FST_ERR_CTP_INVALID_TYPE':
      return new TandemError('TANDEM_ERR_MALFORMED_REQUEST', fe.message ?? 'unsupported body', {
        expected: 'application/json',
      });
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new TandemError('TANDEM_ERR_PAYLOAD_TOO_LARGE', 'the request body is larger than the limit');
  }
  // The job database refused a write or a read (disk full, I/O error, busy): the service is degraded,
  // the request did nothing; a client may retry (503, not 500).
  if (typeof fe.code === 'string' && fe.code.startsWith('SQLITE_'))
    return new TandemError('TANDEM_ERR_UNAVAILABLE', `the job database: ${fe.message ?? fe.code}`, {
      sqlite: fe.code,
    });
  if (fe instanceof SyntaxError)
    return new TandemError('TANDEM_ERR_MALFORMED_REQUEST', `the body is not valid JSON: ${fe.message}`);
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500)
    return new TandemError('TANDEM_ERR_INVALID_ARGUMENT', fe.message ?? 'bad request', {
      fastifyCode: fe.code,
    });
  return new TandemError('TANDEM_ERR_INTERNAL', 'an internal error', {}, { cause: e });
}

/** At most this much of a request's path is echoed back in an error message. */
export const SHOWN_PATH_CHARS = 96;

/** `text` cut to SHOWN_PATH_CHARS: what a client sent is not reflected back whole. */
export function shorten(text: string): string {
  return text.length <= SHOWN_PATH_CHARS
    ? text
    : `${text.slice(0, SHOWN_PATH_CHARS)}… (${text.length} chars)`;
}

/** The path without its query, shortened. */
export function shownPath(url: string): string {
  return shorten(url.split('?')[0] ?? '');
}

export function sendError(reply: FastifyReply, err: TandemError): FastifyReply {
  const status = err.httpStatus;
  const message = messageText(err);
  if (status === 429 || err.details['retryAfterSeconds'] !== undefined)
    void reply.header('retry-after', String(err.details['retryAfterSeconds'] ?? 1));
  return reply
    .code(status)
    .type('application/json')
    .send({ error: { code: err.code, message, details: err.details } });
}

export function installErrorHandling(app: FastifyInstance, onError: (code: ErrorCode) => void): void {
  app.setErrorHandler((e: unknown, req: FastifyRequest, reply: FastifyReply) => {
    const err = toTandemError(e);
    onError(err.code);
    if (err.code === 'TANDEM_ERR_INTERNAL') req.log.error({ err: e }, 'internal error');
    return sendError(reply, err);
  });
  app.setNotFoundHandler((req, reply) => {
    onError('TANDEM_ERR_NOT_FOUND');
    return sendError(
      reply,
      new TandemError('TANDEM_ERR_NOT_FOUND', `no route ${req.method} ${shownPath(req.url)}`),
    );
  });
}
