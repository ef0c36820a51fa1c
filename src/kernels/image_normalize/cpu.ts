import type { CpuKernel } from '../../devices/cpu/kernel-api.js';
import { encodeHalf, isHalf } from '../common/cpu-float.js';
import { imageNormalizeParams, normalizeInto } from './params.js';

/** image_normalize on the CPU: params.ts's formula in double, stored into y (16-bit through f32 scratch). */
export const imageNormalizeCpu: CpuKernel = (args, scalars) => {
  const [x, y] = args;
  const [n, h, w] = x!.desc.shape as [number, number, number, number];
  const p = imageNormalizeParams('image_normalize', scalars);
  if (!isHalf(y!.desc.dtype)) {
    normalizeInto(p, x!.data, y!.data as Float32Array | Float64Array, n, h * w);
    return;
  }
  const staged = new Float32Array(y!.data.length);
  normalizeInto(p, x!.data, staged, n, h * w);
  encodeHalf(y!.desc.dtype, staged, y!.data as Uint16Array);
};
