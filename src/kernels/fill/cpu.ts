import { f32ToBf16, f32ToF16 } from '../../core/dtype.js';
import type { CpuKernel } from '../../devices/cpu/kernel-api.js';
import { fillValue } from './def.js';

export const fillCpu: CpuKernel = (args, scalars) => {
  const y = args[0]!;
  const value = fillValue(scalars, y.desc.dtype);
  // 16-bit floats are stored as words: encode the value once, then fill with the word.
  if (y.desc.dtype === 'f16') y.data.fill(f32ToF16(value));
  else if (y.desc.dtype === 'bf16') y.data.fill(f32ToBf16(value));
  else y.data.fill(value);
};
