import { bytesPerElement } from '../../core/dtype.js';
import type { Cost } from '../kernel.js';
import type { ArgDescs } from '../common/validate.js';

/**
 * The linear ops' costs: one gemm (2mnk flops) plus `perElement` flops per output element for the
 * bias and activation; bytes = every tensor read or written once.
 */
export function linearCost(
  mnk: { m: number; n: number; k: number },
  es: number,
  elementsMoved: number,
  perElement: number,
): Cost {
  const { m, n, k } = mnk;
  return { flops: 2 * m * n * k + perElement * m * n, bytes: es * elementsMoved };
}

export function elementSize(args: ArgDescs, name: string): number {
  return bytesPerElement(args[name]!.dtype);
}
