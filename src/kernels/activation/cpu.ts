import type { CpuKernel } from '../../devices/cpu/kernel-api.js';
import { forFloatChunks } from '../common/cpu-float.js';
import { enumScalar } from '../common/scalars.js';
import { ACT_OPS, applyAct } from './ops.js';

export const activationCpu: CpuKernel = (args, scalars) => {
  const op = enumScalar('activation', scalars, 'op', ACT_OPS);
  forFloatChunks(args, [true, false], [false, true], ([x, y], n) => applyAct(op, x!, y!, n));
};
