/**
 * CPU attention_backward, one (batch, head) at a time, all products by GEMM on [T, d] / [T, T] panels:
 * P = exp(scale·q·kᵀ − lse) (causal), dv = Pᵀ·dy, dP = dy·vᵀ, dS = P ⊙ (dP − rowsum(dy ⊙ y)),
 * dq = scale·dS·k, dk = scale·dSᵀ·q. f16/bf16 decode to f32 and round once on store.
 */
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import { type FloatArray, floatCopyOf, storeFloat } from '../common/cpu-float.js';
import { allocFloat, gatherQkv, gatherRows, panelGemm, scatterQkv } from '../attention/cpu-heads.js';
import { attentionDims } from '../attention/params.js';

export const attentionBackwardCpu: CpuKernel = (args, scalars, ctx) => {
  const [dyArg, qkvArg, yArg, lseArg, dqkvArg] = args as [CpuArg, CpuArg, CpuArg, CpuArg, CpuArg];
  const d = attentionDims('attention_backward', qkvArg.desc, scalars);
  const { seq: T, headDim: hd } = d;
  if (d.batch === 0 || T === 0) return;
  const dtype = qkvArg.desc.dtype;
  const f64 = dtype === 'f64';
  const gemm = panelGemm('attention_backward', ctx, f64);
  const qkv = floatCopyOf(qkvArg);
  const dyAll = floatCopyOf(dyArg);
  const yAll = floatCopyOf(yArg);
  const lse = lseArg.data as Float32Array | Float64Array;
  const dqkv: FloatArray =
    dtype === 'f32' || f64 ? (dqkvArg.data as FloatArray) : new Float32Array(dqkvArg.data.length);
  const panel = (): FloatArray => allocFloat(f64, T * hd);
  const [q, k, v, dy, y, dq, dk, dv] = [
    panel(),
    panel(),
    panel(),
    panel(),
    panel(),
    panel(),
    panel(),
    panel(),
  ];
  const p = allocFloat(f64, T * T);
  const ds = allocFloat(f64, T * T);
  for (let b = 0; b < d.batch; b++) {
    for (let h = 0; h < d.heads; h++) {
      gatherQkv(d, qkv, b, h, 0, q);
      gatherQkv(d, qkv, b, h, 1, k);
      gatherQkv(d, qkv, b, h, 2, v);
      gatherRows(d, dyAll, b, h, dy);
      gatherRows(d, yAll, b, h, y);
      gemm(false, true, T, T, hd, d.scale, q, k, 0, p);
      gemm(false, true, T, T, hd, 1, dy, v, 0, ds);
      for (let t = 0; t < T; t++) {
        const row = t * T;
        const rowLse = lse[(b * d.heads + h) * T + t]!;
        let delta = 0;
        for (let i = 0; i < hd; i++) delta += dy[t * hd + i]! * y[t * hd + i]!;
        for (let s = 0; s <= t; s++) {
          const prob = Math.exp(p[row + s]! - rowLse);
          p[row + s] = prob;
          ds[row + s] = prob * (ds[row + s]! - delta);
        }
        p.fill(0, row + t + 1, row + T);
        ds.fill(0, row + t + 1, row + T);
      }
      gemm(true, false, T, hd, T, 1, p, dy, 0, dv);
      gemm(false, false, T, hd, T, d.scale, ds, k, 0, dq);
      gemm(true, false, T, hd, T, d.scale, ds, q, 0, dk);
      scatterQkv(d, dq, b, h, 0, dqkv);
      scatterQkv(d, dk, b, h, 1, dqkv);
      scatterQkv(d, dv, b, h, 2, dqkv);
    }
  }
  storeFloat(dqkvArg, dqkv);
};
