import { bytesPerElement } from '../../core/dtype.js';
import { numel } from '../../core/shape.js';
import type { Cost } from '../kernel.js';
import type { ArgDescs } from '../common/validate.js';

/** One multiply-add per element; x read, y read and written. */
export function axpyCost(args: ArgDescs): Cost {
  const n = numel(args.y!.shape);
  return { flops: 2 * n, bytes: 3 * n * bytesPerElement(args.y!.dtype) };
}
