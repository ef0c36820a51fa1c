import { TandemError } from './errors.js';

export type Shape = readonly number[];

/** Largest element count a single tensor may have (2^40 elements: far beyond any device). */
export const MAX_ELEMENTS = 2 ** 40;
export const MAX_RANK = 8;

export function assertSize(value: unknown, what: string, { min = 0, max = MAX_ELEMENTS } = {}): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new TandemError(
      'TANDEM_ERR_SIZE',
      `${what} must be an integer in [${min}, ${max}], got ${typeof value === 'number' ? value : JSON.stringify(value)}`,
      { what, value: typeof value === 'number' ? value : String(value), min, max },
    );
  }
  return value;
}

export function assertShape(shape: unknown, what = 'shape'): Shape {
  if (!Array.isArray(shape)) throw new TandemError('TANDEM_ERR_SHAPE', `${what} must be an array of sizes`);
  if (shape.length > MAX_RANK)
    throw new TandemError('TANDEM_ERR_SHAPE', `${what} has rank ${shape.length} > ${MAX_RANK}`);
  let n = 1;
  shape.forEach((d, i) => {
    assertSize(d, `${what}[${i}]`);
    n *= d as number;
  });
  if (n > MAX_ELEMENTS) {
    throw new TandemError(
      'TANDEM_ERR_SIZE',
      `${what} [${shape.join(', ')}] has ${n} elements, more than ${MAX_ELEMENTS}`,
    );
  }
  return Object.freeze([...(shape as number[])]);
}

export function numel(shape: Shape): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

export function sameShape(a: Shape, b: Shape): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

export function shapeStr(shape: Shape): string {
  return `[${shape.join(', ')}]`;
}
