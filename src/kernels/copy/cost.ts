import { bytesPerElement } from '../../core/dtype.js';
import { numel } from '../../core/shape.js';
import type { Cost } from '../kernel.js';
import type { ArgDescs } from '../common/validate.js';

/** x read once, y written once. */
export function copyCost(args: ArgDescs): Cost {
  return { flops: 0, bytes: 2 * numel(args.x!.shape) * bytesPerElement(args.x!.dtype) };
}
