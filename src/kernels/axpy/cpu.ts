import type { CpuKernel } from '../../devices/cpu/kernel-api.js';
import { forFloatChunks } from '../common/cpu-float.js';
import { numberScalar } from '../common/scalars.js';

export const axpyCpu: CpuKernel = (args, scalars) => {
  const alpha = numberScalar('axpy', scalars, 'alpha', 1);
  forFloatChunks(args, [true, true], [false, true], ([x, y], n) => {
    for (let i = 0; i < n; i++) y![i] = alpha * x![i]! + y![i]!;
  });
};
