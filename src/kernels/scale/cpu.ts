import type { CpuKernel } from '../../devices/cpu/kernel-api.js';
import { forFloatChunks } from '../common/cpu-float.js';
import { numberScalar } from '../common/scalars.js';

export const scaleCpu: CpuKernel = (args, scalars) => {
  const alpha = numberScalar('scale', scalars, 'alpha');
  forFloatChunks(args, [true], [true], ([x], n) => {
    for (let i = 0; i < n; i++) x![i]! *= alpha;
  });
};
