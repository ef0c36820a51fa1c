/**
 * Shape limits on JSON bodies, checked after parsing and before any schema or job-type validation:
 * a body nested thousands deep overflowed the stack in code that walks values recursively (validation
 * messages, JSON.stringify when storing), which answered 500. The walk here is iterative, so it holds
 * for any depth the byte limit lets in, and the answer is a 400 with a stable code.
 */
import type { FastifyInstance } from 'fastify';
import { TandemError } from '../../core/errors.js';

export interface JsonShapeLimits {
  /** Containers (objects, arrays) nested in one another; the body itself is depth 1. */
  readonly maxDepth: number;
  /** Values of any kind (containers, strings, numbers ...) in the whole body. */
  readonly maxValues: number;
}

/** A job's params are body.params, so they may nest 30 deep: far more than any job type uses (4). */
export const BODY_SHAPE_LIMITS: JsonShapeLimits = { maxDepth: 32, maxValues: 100_000 };

/** Throws TANDEM_ERR_LIMIT when `value` nests deeper or holds more values than `limits` allow. */
export function checkJsonShape(value: unknown, limits: JsonShapeLimits, where = 'the request body'): void {
  const tooMany = (): TandemError =>
    new TandemError('TANDEM_ERR_LIMIT', `${where} holds more than ${limits.maxValues} values`, {
      limit: 'values',
      max: limits.maxValues,
    });
  if (typeof value !== 'object' || value === null) {
    if (limits.maxValues < 1) throw tooMany();
    return;
  }
  // Only containers go on the stack; a primitive member is counted where its container is read. Most
  // of an infer body is a flat array of numbers (token ids, pixels): counting them in one loop, with no
  // push and pop per number, made this walk several times cheaper on a 1,024-token GPT request.
  const stack: object[] = [value];
  const depths: number[] = [1];
  let values = 1;
  if (values > limits.maxValues) throw tooMany();
  while (stack.length > 0) {
    const v = stack.pop()!;
    const depth = depths.pop()!;
    if (depth > limits.maxDepth)
      throw new TandemError('TANDEM_ERR_LIMIT', `${where} nests deeper than ${limits.maxDepth} levels`, {
        limit: 'depth',
        max: limits.maxDepth,
      });
    if (Array.isArray(v)) {
      const items = v as unknown[];
      for (let i = 0; i < items.length; i++) {
        const item = items[i];
        if (++values > limits.maxValues) throw tooMany();
        if (typeof item === 'object' && item !== null && !ArrayBuffer.isView(item)) {
          stack.push(item);
          depths.push(depth + 1);
        }
      }
    } else {
      for (const k in v)
        if (Object.hasOwn(v, k)) {
          const item = (v as Record<string, unknown>)[k];
          if (++values > limits.maxValues) throw tooMany();
          // Typed arrays are bytes (a binary infer body's tensors), not JSON containers.
          if (typeof item === 'object' && item !== null && !ArrayBuffer.isView(item)) {
            stack.push(item);
            depths.push(depth + 1);
          }
        }
    }
  }
}

/** Every parsed body is checked before its route's schema sees it. */
export function installBodyLimits(app: FastifyInstance, limits = BODY_SHAPE_LIMITS): void {
  // Callback style (no promise per request): every request with a body passes through it.
  app.addHook('preValidation', (req, _reply, done) => {
    // A streamed body (a model's weights upload) is bytes, not JSON: nothing to walk.
    const streamed = typeof (req.body as { pipe?: unknown } | null)?.pipe === 'function';
    if (typeof req.body === 'object' && req.body !== null && !streamed)
      try {
        checkJsonShape(req.body, limits);
      } catch (e) {
        done(e as Error);
        return;
      }
    done();
  });
}
