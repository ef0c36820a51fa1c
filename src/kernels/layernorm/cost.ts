import { bytesPerElement } from '../../core/dtype.js';
import { numel } from '../../core/shape.js';
import type { Cost } from '../kernel.js';
import type { ArgDescs } from '../common/validate.js';

/** About 8 flops per element; x read once, y written once, w/b and the per-row stats are small. */
export function layernormCost(args: ArgDescs): Cost {
  const x = args.x!;
  const n = numel(x.shape);
  const cols = x.shape[x.shape.length - 1]!;
  const e = bytesPerElement(x.dtype);
  return { flops: 8 * n, bytes: 2 * n * e + 2 * cols * e + (2 * n * 4) / cols };
}
