import type { CpuKernel } from '../../devices/cpu/kernel-api.js';
import { decodeHalf, encodeHalf, isHalf } from '../common/cpu-float.js';
import { saturateI32, saturateU8 } from './convert.js';

const CHUNK = 4096;

/**
 * Works in chunks: a 16-bit source is decoded into f32 scratch, a 16-bit destination is staged in f32
 * scratch and encoded. Float destinations take typed-array assignment (IEEE round to nearest); integer
 * destinations saturate (convert.ts), which typed-array assignment would not (it wraps).
 */
export const castCpu: CpuKernel = (args) => {
  const [x, y] = args;
  const src = x!.desc.dtype;
  const dst = y!.desc.dtype;
  const n = x!.data.length;
  const inScratch = isHalf(src) ? new Float32Array(Math.min(CHUNK, n)) : null;
  const outScratch = isHalf(dst) ? new Float32Array(Math.min(CHUNK, n)) : null;
  for (let start = 0; start < n; start += CHUNK) {
    const len = Math.min(CHUNK, n - start);
    let values: ArrayLike<number> = x!.data.subarray(start, start + len);
    if (inScratch !== null) {
      const v = inScratch.subarray(0, len);
      decodeHalf(src, values as Uint16Array, v);
      values = v;
    }
    const out = y!.data.subarray(start, start + len);
    if (outScratch !== null) {
      const staged = outScratch.subarray(0, len);
      staged.set(values);
      encodeHalf(dst, staged, out as Uint16Array);
    } else if (dst === 'i32') {
      for (let i = 0; i < len; i++) out[i] = saturateI32(values[i]!);
    } else if (dst === 'u8') {
      for (let i = 0; i < len; i++) out[i] = saturateU8(values[i]!);
    } else {
      out.set(values);
    }
  }
};
