/**
 * Float64 reference for attention_backward, the FlashAttention-2 formulas on the given y and lse:
 * P = exp(scale·q·kᵀ − lse) (causal), D = rowsum(dy ⊙ y), dS = P ⊙ (dy·vᵀ − D),
 * dq = scale·dS·k, dk = scale·dSᵀ·q, dv = Pᵀ·dy. With the forward's y and lse this is the gradient.
 */
import type { ReferenceFn } from '../common/reference.js';
import { type AttentionDims, attentionDims } from '../attention/params.js';
import { qkvIndex, scoreRow } from '../attention/reference.js';

export function attentionBackwardValues(
  d: AttentionDims,
  dy: Float64Array,
  qkv: Float64Array,
  y: Float64Array,
  lse: Float64Array,
): Float64Array {
  const dqkv = new Float64Array(qkv.length);
  const hd = d.headDim;
  for (let b = 0; b < d.batch; b++) {
    for (let h = 0; h < d.heads; h++) {
      for (let t = 0; t < d.seq; t++) {
        const row = scoreRow(d, qkv, b, h, t);
        const rowLse = lse[(b * d.heads + h) * d.seq + t]!;
        const out = (b * d.seq + t) * d.width + h * hd;
        let delta = 0;
        for (let i = 0; i < hd; i++) delta += dy[out + i]! * y[out + i]!;
        const q = qkvIndex(d, b, t, 0, h);
        for (let s = 0; s <= t; s++) {
          const p = Math.exp(row[s]! - rowLse);
          const k = qkvIndex(d, b, s, 1, h);
          const v = qkvIndex(d, b, s, 2, h);
          let dp = 0;
          for (let i = 0; i < hd; i++) dp += dy[out + i]! * qkv[v + i]!;
          const ds = p * (dp - delta);
          for (let i = 0; i < hd; i++) {
            dqkv[q + i]! += d.scale * ds * qkv[k + i]!;
            dqkv[k + i]! += d.scale * ds * qkv[q + i]!;
            dqkv[v + i]! += p * dy[out + i]!;
          }
        }
      }
    }
  }
  return dqkv;
}

export const attentionBackwardReference: ReferenceFn = (args, scalars) => {
  const d = attentionDims('attention_backward', args.qkv!.desc, scalars);
  return {
    dqkv: attentionBackwardValues(d, args.dy!.values, args.qkv!.values, args.y!.values, args.lse!.values),
  };
};
