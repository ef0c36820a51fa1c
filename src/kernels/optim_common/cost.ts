import { bytesPerElement } from '../../core/dtype.js';
import { numel } from '../../core/shape.js';
import type { ArgDescs } from '../common/validate.js';
import type { Cost } from '../kernel.js';

/**
 * Element-wise optimizer steps are bandwidth-bound: every `updated` tensor is read and written once,
 * every `read` tensor read once; `flopsPerElement` counts the arithmetic of one parameter element.
 */
export function optimizerCost(
  args: ArgDescs,
  updated: readonly string[],
  read: readonly string[],
  flopsPerElement: number,
): Cost {
  const bytesOf = (name: string): number => numel(args[name]!.shape) * bytesPerElement(args[name]!.dtype);
  let bytes = 0;
  for (const name of updated) bytes += 2 * bytesOf(name);
  for (const name of read) bytes += bytesOf(name);
  return { flops: flopsPerElement * numel(args[updated[0]!]!.shape), bytes };
}
