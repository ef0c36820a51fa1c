import { bytesPerElement } from '../../core/dtype.js';
import { numel } from '../../core/shape.js';
import type { Scalars } from '../../devices/device.js';
import type { Cost } from '../kernel.js';
import { enumScalar } from '../common/scalars.js';
import type { ArgDescs } from '../common/validate.js';
import { UNARY_FLOPS, UNARY_OPS } from './ops.js';

export function unaryCost(args: ArgDescs, scalars: Scalars): Cost {
  const n = numel(args.x!.shape);
  const op = enumScalar('unary', scalars, 'op', UNARY_OPS);
  return { flops: n * UNARY_FLOPS[op], bytes: 2 * n * bytesPerElement(args.x!.dtype) };
}
