import type { CpuKernel } from '../../devices/cpu/kernel-api.js';
import { type FloatArray, floatCopyOf, storeFloat } from '../common/cpu-float.js';
import { xentParams } from './def.js';

/**
 * One row at a time: max and Σexp over the row, then the loss and (with backward) the gradient written
 * over the row's logits. f16/bf16 rows are decoded to f32; sums run in JS doubles.
 */
export const softmaxXentCpu: CpuKernel = (args, scalars) => {
  const [logitsA, targetsA, lossesA] = args;
  const p = xentParams(logitsA!.desc, scalars);
  const x = floatCopyOf(logitsA!);
  const targets = targetsA!.data as Int32Array;
  const losses = lossesA!.data as FloatArray;
  for (let i = 0, base = 0; i < p.rows; i++, base += p.padded) {
    let m = -Infinity;
    for (let j = 0; j < p.vocab; j++) {
      const v = x[base + j]!;
      if (v > m) m = v;
    }
    let s = 0;
    for (let j = 0; j < p.vocab; j++) s += Math.exp(x[base + j]! - m);
    const lse = m + Math.log(s);
    const t = targets[i]!;
    const valid = t >= 0 && t < p.vocab;
    losses[i] = t === -1 ? 0 : valid ? lse - x[base + t]! : NaN;
    if (!p.backward) continue;
    for (let j = 0; j < p.vocab; j++) {
      const g = (Math.exp(x[base + j]! - lse) - (j === t ? 1 : 0)) * p.gradScale;
      x[base + j] = t === -1 ? 0 : valid ? g : NaN;
    }
    x.fill(0, base + p.vocab, base + p.padded);
  }
  if (p.backward) storeFloat(logitsA!, x);
};
