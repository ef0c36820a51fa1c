import type { KernelDef } from '../kernel.js';
import { checkScalarNames } from '../common/scalars.js';
import { checkArgNames } from '../common/validate.js';
import {
  ATTENTION_SCALARS,
  attentionDims,
  requireLse,
  requirePacked,
  requireRows,
} from '../attention/params.js';
import { attentionBackwardCost } from './cost.js';

/**
 * Gradients of causal attention with respect to q, k and v, written into dqkv in qkv's packed layout.
 * The probabilities are recomputed from `lse` and delta = rowsum(dy ⊙ y) from the given `y`
 * (FlashAttention-2), so y and lse must be the forward's outputs for the result to be the gradient.
 */
export const attentionBackwardDef: KernelDef = {
  name: 'attention_backward',
  args: [
    { name: 'dy', mode: 'r' },
    { name: 'qkv', mode: 'r' },
    { name: 'y', mode: 'r' },
    { name: 'lse', mode: 'r' },
    { name: 'dqkv', mode: 'w' },
  ],
  validate(args, scalars) {
    const op = 'attention_backward';
    checkArgNames(op, attentionBackwardDef.args, args);
    checkScalarNames(op, scalars, ATTENTION_SCALARS);
    const d = attentionDims(op, args.qkv!, scalars);
    requireRows(op, 'dy', args.dy!, args.qkv!, d);
    requireRows(op, 'y', args.y!, args.qkv!, d);
    requireLse(op, args.lse!, args.qkv!, d);
    requirePacked(op, 'dqkv', args.dqkv!, args.qkv!);
  },
  cost: attentionBackwardCost,
};
