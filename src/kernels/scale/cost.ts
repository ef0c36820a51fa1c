import { bytesPerElement } from '../../core/dtype.js';
import { numel } from '../../core/shape.js';
import type { Cost } from '../kernel.js';
import type { ArgDescs } from '../common/validate.js';

/** One multiply per element; x read and written. */
export function scaleCost(args: ArgDescs): Cost {
  const n = numel(args.x!.shape);
  return { flops: n, bytes: 2 * n * bytesPerElement(args.x!.dtype) };
}
