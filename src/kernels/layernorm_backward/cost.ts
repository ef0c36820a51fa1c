import { bytesPerElement } from '../../core/dtype.js';
import { numel } from '../../core/shape.js';
import type { Cost } from '../kernel.js';
import type { ArgDescs } from '../common/validate.js';

/** dy and x read, dx written (and read when accumulating): three or four passes over [M, C]. */
export function layernormBackwardCost(args: ArgDescs): Cost {
  const x = args.x!;
  const n = numel(x.shape);
  const cols = x.shape[x.shape.length - 1]!;
  const e = bytesPerElement(x.dtype);
  return { flops: 12 * n, bytes: 3 * n * e + 3 * cols * e + (2 * n * 4) / cols };
}
