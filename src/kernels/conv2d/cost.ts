import { bytesPerElement } from '../../core/dtype.js';
import { numel } from '../../core/shape.js';
import type { Scalars } from '../../devices/device.js';
import type { Cost } from '../kernel.js';
import type { ArgDescs } from '../common/validate.js';
import { convGeometry } from './geometry.js';

/** Multiply-adds of the implicit GEMM: 2·N·O·Ho·Wo·C·kh·kw (backward: twice that, for dx and dw). */
export function convFlops(args: ArgDescs, scalars: Scalars, op: string): number {
  const g = convGeometry(args.x!.shape, args.w!.shape, scalars, op);
  return 2 * g.n * g.o * g.ho * g.wo * g.c * g.kh * g.kw;
}

/** Every tensor read or written once. */
export function touchedBytes(args: ArgDescs): number {
  let bytes = 0;
  for (const name in args) bytes += numel(args[name]!.shape) * bytesPerElement(args[name]!.dtype);
  return bytes;
}

export function conv2dCost(args: ArgDescs, scalars: Scalars): Cost {
  return { flops: convFlops(args, scalars, 'conv2d'), bytes: touchedBytes(args) };
}
