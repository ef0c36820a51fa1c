/**
 * CPU attention, one (batch, head) at a time: S = scale·q·kᵀ by GEMM (the full square; the masked half
 * costs less than a triangular loop in JS), a causal softmax per row that also gives lse, then y = P·v
 * by GEMM. f16/bf16 decode to f32 and round once on store.
 */
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import { floatCopyOf, storeFloat } from '../common/cpu-float.js';
import { allocFloat, gatherQkv, panelGemm, scatterRows } from './cpu-heads.js';
import { attentionDims } from './params.js';

export const attentionCpu: CpuKernel = (args, scalars, ctx) => {
  const [qkvArg, yArg, lseArg] = args as [CpuArg, CpuArg, CpuArg];
  const d = attentionDims('attention', qkvArg.desc, scalars);
  const { seq: T, headDim: hd } = d;
  if (d.batch === 0 || T === 0) return;
  const f64 = qkvArg.desc.dtype === 'f64';
  const gemm = panelGemm('attention', ctx, f64);
  const qkv = floatCopyOf(qkvArg);
  const y = f64
    ? (yArg.data as Float64Array)
    : qkvArg.desc.dtype === 'f32'
      ? (yArg.data as Float32Array)
      : new Float32Array(yArg.data.length);
  const lse = lseArg.data as Float32Array | Float64Array;
  const q = allocFloat(f64, T * hd);
  const k = allocFloat(f64, T * hd);
  const v = allocFloat(f64, T * hd);
  const out = allocFloat(f64, T * hd);
  const p = allocFloat(f64, T * T);
  for (let b = 0; b < d.batch; b++) {
    for (let h = 0; h < d.heads; h++) {
      gatherQkv(d, qkv, b, h, 0, q);
      gatherQkv(d, qkv, b, h, 1, k);
      gatherQkv(d, qkv, b, h, 2, v);
      gemm(false, true, T, T, hd, d.scale, q, k, 0, p);
      for (let t = 0; t < T; t++) {
        const row = t * T;
        let max = -Infinity;
        for (let s = 0; s <= t; s++) max = Math.max(max, p[row + s]!);
        let sum = 0;
        for (let s = 0; s <= t; s++) {
          const e = Math.exp(p[row + s]! - max);
          p[row + s] = e;
          sum += e;
        }
        const inv = 1 / sum;
        for (let s = 0; s <= t; s++) p[row + s]! *= inv;
        p.fill(0, row + t + 1, row + T);
        lse[(b * d.heads + h) * T + t] = max + Math.log(sum);
      }
      gemm(false, false, T, hd, T, 1, p, v, 0, out);
      scatterRows(d, out, b, h, y);
    }
  }
  storeFloat(yArg, y);
};
