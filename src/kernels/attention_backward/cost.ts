import { bytesPerElement } from '../../core/dtype.js';
import { numel } from '../../core/shape.js';
import type { Scalars } from '../../devices/device.js';
import type { Cost } from '../kernel.js';
import type { ArgDescs } from '../common/validate.js';
import { attentionFlops } from '../attention/cost.js';

/**
 * Five products per kept pair (q·kᵀ recomputed, dy·vᵀ, dS·k, dSᵀ·q, Pᵀ·dy): 2.5x the forward, the
 * usual FlashAttention-2 count.
 */
export function attentionBackwardCost(args: ArgDescs, scalars: Scalars): Cost {
  let bytes = 0;
  for (const name of ['dy', 'qkv', 'y', 'lse', 'dqkv'] as const) {
    bytes += numel(args[name]!.shape) * bytesPerElement(args[name]!.dtype);
  }
  return { flops: 2.5 * attentionFlops(args, scalars), bytes };
}
