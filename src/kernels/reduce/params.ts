/**
 * reduce's shape rules, shared by validation, cost and every implementation:
 * - `axis` (integer, negative counts from the end) reduces that one axis: x [.., d, ..] -> y = x's shape
 *   without it. A result of rank 0 is written as shape [1] (shape [] is accepted too).
 * - `all: true` (and no axis) reduces every element: y has shape [1] (or []).
 * The tensor is seen as [outer, len, inner] with `len` the reduced extent.
 */
import { TandemError } from '../../core/errors.js';
import { type Shape, numel, shapeStr } from '../../core/shape.js';
import type { Scalars } from '../../devices/device.js';
import { boolScalar, enumScalar, intScalar } from '../common/scalars.js';

export const REDUCE_OPS = ['sum', 'max', 'mean'] as const;
export type ReduceOp = (typeof REDUCE_OPS)[number];

export interface ReduceLayout {
  readonly op: ReduceOp;
  readonly outer: number;
  readonly len: number;
  readonly inner: number;
  /** The shape y must have (rank-0 results as [1]). */
  readonly yShape: Shape;
}

export function reduceLayout(xShape: Shape, scalars: Scalars): ReduceLayout {
  const op = enumScalar('reduce', scalars, 'op', REDUCE_OPS);
  const all = boolScalar('reduce', scalars, 'all', false);
  if (all) {
    if (scalars.axis !== undefined) {
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        'reduce: give either "axis" or "all: true", not both',
      );
    }
    return { op, outer: 1, len: numel(xShape), inner: 1, yShape: [1] };
  }
  if (scalars.axis === undefined) {
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      'reduce: scalar "axis" is required (or "all: true")',
    );
  }
  const rank = xShape.length;
  const given = intScalar('reduce', scalars, 'axis');
  if (given < -rank || given >= rank) {
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `reduce: axis ${given} is out of range for x of shape ${shapeStr(xShape)} (rank ${rank})`,
      { axis: given, rank },
    );
  }
  const axis = given < 0 ? given + rank : given;
  const yShape = xShape.filter((_, i) => i !== axis);
  return {
    op,
    outer: numel(xShape.slice(0, axis)),
    len: xShape[axis]!,
    inner: numel(xShape.slice(axis + 1)),
    yShape: yShape.length === 0 ? [1] : yShape,
  };
}
