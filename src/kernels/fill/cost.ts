import { bytesPerElement } from '../../core/dtype.js';
import { numel } from '../../core/shape.js';
import type { Cost } from '../kernel.js';
import type { ArgDescs } from '../common/validate.js';

/** Pure store bandwidth: y written once. */
export function fillCost(args: ArgDescs): Cost {
  return { flops: 0, bytes: numel(args.y!.shape) * bytesPerElement(args.y!.dtype) };
}
