import { bytesPerElement } from '../../core/dtype.js';
import { numel } from '../../core/shape.js';
import type { Cost } from '../kernel.js';
import type { ArgDescs } from '../common/validate.js';

/** a and r read, s and y written: four passes of the [M, C] tensor's bytes. */
export function residualLayernormCost(args: ArgDescs): Cost {
  const a = args.a!;
  const n = numel(a.shape);
  const cols = a.shape[a.shape.length - 1]!;
  const e = bytesPerElement(a.dtype);
  return { flops: 9 * n, bytes: 4 * n * e + 2 * cols * e + (2 * n * 4) / cols };
}
