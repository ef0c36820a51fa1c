import { bytesPerElement } from '../../core/dtype.js';
import { numel } from '../../core/shape.js';
import type { Scalars } from '../../devices/device.js';
import type { Cost } from '../kernel.js';
import { enumScalar } from '../common/scalars.js';
import type { ArgDescs } from '../common/validate.js';
import { BINARY_OPS } from './ops.js';

/** One flop per element (pow: a log and an exp); a and b read, c written. */
export function binaryCost(args: ArgDescs, scalars: Scalars): Cost {
  const n = numel(args.c!.shape);
  const op = enumScalar('binary', scalars, 'op', BINARY_OPS);
  return { flops: n * (op === 'pow' ? 32 : 1), bytes: 3 * n * bytesPerElement(args.c!.dtype) };
}
