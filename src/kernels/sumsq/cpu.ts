import type { CpuKernel } from '../../devices/cpu/kernel-api.js';
import { decodeHalf, isHalf } from '../common/cpu-float.js';

const CHUNK = 4096;

/** Σ x² accumulated in float64 (every dtype), added to acc and rounded once on store. */
export const sumsqCpu: CpuKernel = (args) => {
  const x = args[0]!;
  const acc = args[1]!.data;
  let sum = 0;
  if (isHalf(x.desc.dtype)) {
    const words = x.data as Uint16Array;
    const scratch = new Float32Array(Math.min(CHUNK, words.length));
    for (let start = 0; start < words.length; start += CHUNK) {
      const len = Math.min(CHUNK, words.length - start);
      const v = scratch.subarray(0, len);
      decodeHalf(x.desc.dtype, words.subarray(start, start + len), v);
      for (let i = 0; i < len; i++) sum += v[i]! * v[i]!;
    }
  } else {
    const v = x.data as Float32Array | Float64Array;
    for (let i = 0; i < v.length; i++) sum += v[i]! * v[i]!;
  }
  acc[0] = acc[0]! + sum;
};
