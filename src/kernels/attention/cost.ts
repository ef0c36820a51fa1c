import { bytesPerElement } from '../../core/dtype.js';
import { numel } from '../../core/shape.js';
import type { Scalars } from '../../devices/device.js';
import type { Cost } from '../kernel.js';
import type { ArgDescs } from '../common/validate.js';
import { attentionDims, causalPairs } from './params.js';

/** Causal forward FLOPs: two products (q·kᵀ and P·v) of 2d flops per kept (t, s) pair, per head. */
export function attentionFlops(args: ArgDescs, scalars: Scalars): number {
  const d = attentionDims('attention', args.qkv!, scalars);
  return 4 * d.batch * d.heads * causalPairs(d.seq) * d.headDim;
}

/** qkv read once, y and lse written once (the scores never leave the chip on a flash-style kernel). */
export function attentionCost(args: ArgDescs, scalars: Scalars): Cost {
  const bytes =
    numel(args.qkv!.shape) * bytesPerElement(args.qkv!.dtype) +
    numel(args.y!.shape) * bytesPerElement(args.y!.dtype) +
    numel(args.lse!.shape) * bytesPerElement(args.lse!.dtype);
  return { flops: attentionFlops(args, scalars), bytes };
}
