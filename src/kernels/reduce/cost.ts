import { bytesPerElement } from '../../core/dtype.js';
import { numel } from '../../core/shape.js';
import type { Cost } from '../kernel.js';
import type { ArgDescs } from '../common/validate.js';

/** One flop per input element; x read once, y written once. */
export function reduceCost(args: ArgDescs): Cost {
  const n = numel(args.x!.shape);
  return { flops: n, bytes: (n + numel(args.y!.shape)) * bytesPerElement(args.x!.dtype) };
}
