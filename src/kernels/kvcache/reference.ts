/** Float64 references of the KV-cache ops (the conformance cases check every backend against these). */
import type { ReferenceFn } from '../common/reference.js';
import { kvHeads } from './params.js';

/** Rows whose slot or position is outside the cache are not written (a cache never grows by accident). */
export const kvAppendReference: ReferenceFn = (args) => {
  const qkv = args.qkv!.values;
  const slot = args.slot!.values;
  const pos = args.pos!.values;
  const [S, P, C] = args.kcache!.desc.shape as [number, number, number];
  const k = Float64Array.from(args.kcache!.values);
  const v = Float64Array.from(args.vcache!.values);
  for (let m = 0; m < slot.length; m++) {
    const s = slot[m]!;
    const p = pos[m]!;
    if (s < 0 || s >= S || p < 0 || p >= P) continue;
    const dst = (s * P + p) * C;
    for (let c = 0; c < C; c++) {
      k[dst + c] = qkv[m * 3 * C + C + c]!;
      v[dst + c] = qkv[m * 3 * C + 2 * C + c]!;
    }
  }
  return { kcache: k, vcache: v };
};

/** y[m, head h] = softmax_{s ≤ pos[m]}(scale·q·k[slot[m], s]) · v[slot[m], s]; a bad slot or pos gives NaN. */
export const kvAttentionReference: ReferenceFn = (args, scalars) => {
  const qkv = args.qkv!.values;
  const slot = args.slot!.values;
  const pos = args.pos!.values;
  const kc = args.kcache!.values;
  const vc = args.vcache!.values;
  const [S, P, C] = args.kcache!.desc.shape as [number, number, number];
  const { heads, headDim: D, scale } = kvHeads('kv_attention', C, scalars);
  const y = new Float64Array(slot.length * C);
  const score = new Float64Array(P);
  for (let m = 0; m < slot.length; m++) {
    const sl = slot[m]!;
    const last = pos[m]!;
    if (sl < 0 || sl >= S || last < 0 || last >= P) {
      y.fill(NaN, m * C, (m + 1) * C);
      continue;
    }
    for (let h = 0; h < heads; h++) {
      const q = m * 3 * C + h * D;
      let max = -Infinity;
      for (let s = 0; s <= last; s++) {
        const kr = (sl * P + s) * C + h * D;
        let dot = 0;
        for (let c = 0; c < D; c++) dot += qkv[q + c]! * kc[kr + c]!;
        score[s] = scale * dot;
        max = Math.max(max, score[s]!);
      }
      let sum = 0;
      for (let s = 0; s <= last; s++) sum += score[s] = Math.exp(score[s]! - max);
      for (let c = 0; c < D; c++) {
        let acc = 0;
        for (let s = 0; s <= last; s++) acc += score[s]! * vc[(sl * P + s) * C + h * D + c]!;
        y[m * C + h * D + c] = acc / sum;
      }
    }
  }
  return { y };
};

export const embeddingAtReference: ReferenceFn = (args) => {
  const ids = args.ids!.values;
  const pos = args.pos!.values;
  const wte = args.wte!.values;
  const wpe = args.wpe!.values;
  const [V, C] = args.wte!.desc.shape as [number, number];
  const P = args.wpe!.desc.shape[0]!;
  const y = new Float64Array(ids.length * C);
  for (let m = 0; m < ids.length; m++) {
    const id = ids[m]!;
    const p = pos[m]!;
    const ok = id >= 0 && id < V && p >= 0 && p < P;
    for (let c = 0; c < C; c++) y[m * C + c] = ok ? wte[id * C + c]! + wpe[p * C + c]! : NaN;
  }
  return { y };
};

export const gatherRowsReference: ReferenceFn = (args) => {
  const x = args.x!.values;
  const index = args.index!.values;
  const [M, C] = args.x!.desc.shape as [number, number];
  const y = new Float64Array(index.length * C);
  for (let r = 0; r < index.length; r++) {
    const i = index[r]!;
    for (let c = 0; c < C; c++) y[r * C + c] = i >= 0 && i < M ? x[i * C + c]! : NaN;
  }
  return { y };
};
