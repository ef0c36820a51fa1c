import type { CpuKernel } from '../../devices/cpu/kernel-api.js';
import { type FloatArray, decodeHalf, encodeHalf, isHalf } from '../common/cpu-float.js';
import { xentParams } from './def.js';

/**
 * One row at a time: max and Σexp over the row, then the loss and (with backward) the gradient written
 * over the row's logits. f16/bf16 rows are decoded to f32 one row at a time (logits are the largest
 * tensor of a language model: no full-size f32 copy); sums run in JS doubles.
 */
export const softmaxXentCpu: CpuKernel = (args, scalars) => {
  const [logitsA, targetsA, lossesA] = args;
  const p = xentParams(logitsA!.desc, scalars);
  const dtype = logitsA!.desc.dtype;
  const half = isHalf(dtype);
  const scratch = new Float32Array(half ? p.padded : 0);
  const targets = targetsA!.data as Int32Array;
  const losses = lossesA!.data as FloatArray;
  for (let i = 0; i < p.rows; i++) {
    const base = i * p.padded;
    let x: FloatArray;
    if (half) {
      decodeHalf(dtype, (logitsA!.data as Uint16Array).subarray(base, base + p.padded), scratch);
      x = scratch;
    } else {
      x = (logitsA!.data as FloatArray).subarray(base, base + p.padded);
    }
    let m = -Infinity;
    for (let j = 0; j < p.vocab; j++) {
      const v = x[j]!;
      if (v > m) m = v;
    }
    let s = 0;
    for (let j = 0; j < p.vocab; j++) s += Math.exp(x[j]! - m);
    const lse = m + Math.log(s);
    const t = targets[i]!;
    const valid = t >= 0 && t < p.vocab;
    losses[i] = t === -1 ? 0 : valid ? lse - x[t]! : NaN;
    if (!p.backward) continue;
    for (let j = 0; j < p.vocab; j++) {
      const g = (Math.exp(x[j]! - lse) - (j === t ? 1 : 0)) * p.gradScale;
      x[j] = t === -1 ? 0 : valid ? g : NaN;
    }
    x.fill(0, p.vocab, p.padded);
    if (half) encodeHalf(dtype, scratch, (logitsA!.data as Uint16Array).subarray(base, base + p.padded));
  }
};
