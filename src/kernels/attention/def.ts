import type { KernelDef } from '../kernel.js';
import { checkScalarNames } from '../common/scalars.js';
import { checkArgNames } from '../common/validate.js';
import { attentionCost } from './cost.js';
import { ATTENTION_SCALARS, attentionDims, requireLse, requireRows } from './params.js';

/**
 * Causal multi-head self-attention over GPT-2's packed qkv [B, T, 3C]: y [B, T, C] and the per-row
 * log-sum-exp of the scaled scores lse [B, H, T] (kept for attention_backward).
 */
export const attentionDef: KernelDef = {
  name: 'attention',
  args: [
    { name: 'qkv', mode: 'r' },
    { name: 'y', mode: 'w' },
    { name: 'lse', mode: 'w' },
  ],
  validate(args, scalars) {
    checkArgNames('attention', attentionDef.args, args);
    checkScalarNames('attention', scalars, ATTENTION_SCALARS);
    const d = attentionDims('attention', args.qkv!, scalars);
    requireRows('attention', 'y', args.y!, args.qkv!, d);
    requireLse('attention', args.lse!, args.qkv!, d);
  },
  cost: attentionCost,
};
