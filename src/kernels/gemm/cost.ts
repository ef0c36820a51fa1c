import { bytesPerElement } from '../../core/dtype.js';
import type { Scalars } from '../../devices/device.js';
import type { Cost } from '../kernel.js';
import type { ArgDescs } from '../common/validate.js';
import { gemmDims, gemmParams } from './params.js';

/** 2mnk flops; bytes = A and B read once, C written (and read too when beta != 0). */
export function gemmCost(args: ArgDescs, scalars: Scalars): Cost {
  const p = gemmParams(scalars);
  const { m, n, k } = gemmDims(args.a!, args.b!, p);
  const es = bytesPerElement(args.c!.dtype);
  return { flops: 2 * m * n * k, bytes: es * (m * k + k * n + m * n * (p.beta === 0 ? 1 : 2)) };
}
