/** Float64 reference for causal attention (tests and conformance only). */
import type { ReferenceFn } from '../common/reference.js';
import { type AttentionDims, attentionDims } from './params.js';

/** Offset of element i of head h's q (part 0), k (1) or v (2) at row (b, t) of qkv [B, T, 3C]. */
export function qkvIndex(d: AttentionDims, b: number, t: number, part: number, h: number): number {
  return (b * d.seq + t) * 3 * d.width + part * d.width + h * d.headDim;
}

/** The scaled causal scores of row t of head (b, h): scale·q_t·k_s for s ≤ t. */
export function scoreRow(d: AttentionDims, qkv: Float64Array, b: number, h: number, t: number): Float64Array {
  const q = qkvIndex(d, b, t, 0, h);
  const row = new Float64Array(t + 1);
  for (let s = 0; s <= t; s++) {
    const k = qkvIndex(d, b, s, 1, h);
    let dot = 0;
    for (let i = 0; i < d.headDim; i++) dot += qkv[q + i]! * qkv[k + i]!;
    row[s] = d.scale * dot;
  }
  return row;
}

export function attentionForward(
  d: AttentionDims,
  qkv: Float64Array,
): { y: Float64Array; lse: Float64Array } {
  const y = new Float64Array(d.batch * d.seq * d.width);
  const lse = new Float64Array(d.batch * d.heads * d.seq);
  for (let b = 0; b < d.batch; b++) {
    for (let h = 0; h < d.heads; h++) {
      for (let t = 0; t < d.seq; t++) {
        const row = scoreRow(d, qkv, b, h, t);
        const max = row.reduce((m, v) => Math.max(m, v), -Infinity);
        let sum = 0;
        for (let s = 0; s <= t; s++) sum += Math.exp(row[s]! - max);
        lse[(b * d.heads + h) * d.seq + t] = max + Math.log(sum);
        const out = (b * d.seq + t) * d.width + h * d.headDim;
        for (let s = 0; s <= t; s++) {
          const p = Math.exp(row[s]! - max) / sum;
          const v = qkvIndex(d, b, s, 2, h);
          for (let i = 0; i < d.headDim; i++) y[out + i]! += p * qkv[v + i]!;
        }
      }
    }
  }
  return { y, lse };
}

export const attentionReference: ReferenceFn = (args, scalars) => {
  const d = attentionDims('attention', args.qkv!.desc, scalars);
  return attentionForward(d, args.qkv!.values);
};
