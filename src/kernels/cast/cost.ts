import { bytesPerElement } from '../../core/dtype.js';
import { numel } from '../../core/shape.js';
import type { Cost } from '../kernel.js';
import type { ArgDescs } from '../common/validate.js';

/** One conversion per element; x read in its dtype, y written in its own. */
export function castCost(args: ArgDescs): Cost {
  const n = numel(args.x!.shape);
  return { flops: n, bytes: n * (bytesPerElement(args.x!.dtype) + bytesPerElement(args.y!.dtype)) };
}
