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
  const stack: unknown[] = [value];
  const depths: number[] = [1];
  let values = 0;
  while (stack.length > 0) {
    const v = stack.pop();
    const depth = depths.pop()!;
    if (++values > limits.maxValues)
      throw new TandemError('TANDEM_ERR_LIMIT', `${where} holds more than ${limits.maxValues} values`, {
        limit: 'values',
        max: limits.maxValues,
      });
    // Typed arrays are bytes (a binary infer body's tensors), not JSON containers.
    if (typeof v !== 'object' || v === null || ArrayBuffer.isView(v)) continue;
    if (depth > limits.maxDepth)
      throw new TandemError('TANDEM_ERR_LIMIT', `${where} nests deeper than ${limits.maxDepth} levels`, {
        limit: 'depth',
        max: limits.maxDepth,
      });
    if (Array.isArray(v)) {
      for (const item of v as unknown[]) {
        stack.push(item);
        depths.push(depth + 1);
      }
    } else {
      for (const k in v)
        if (Object.hasOwn(v, k)) {
          stack.push((v as Record<string, unknown>)[k]);
          depths.push(depth + 1);
        }
    }
  }
}

/** Every parsed body is checked before its route's schema sees it. */
export function installBodyLimits(app: FastifyInstance, limits = BODY_SHAPE_LIMITS): void {
  app.addHook('preValidation', async (req) => {
    // A streamed body (a model's weights upload) is bytes, not JSON: nothing to walk.
    const streamed = typeof (req.body as { pipe?: unknown } | null)?.pipe === 'function';
    if (typeof req.body === 'object' && req.body !== null && !streamed) checkJsonShape(req.body, limits);
  });
}
