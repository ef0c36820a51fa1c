import type { CpuKernel } from '../../devices/cpu/kernel-api.js';
import { floatCopyOf, storeFloat } from '../common/cpu-float.js';
import { outputView } from '../layernorm/cpu.js';
import { dropoutParams } from '../common/norm-checks.js';
import { dropoutKeepMask } from './mask.js';

export const dropoutCpu: CpuKernel = (args, scalars) => {
  const [xA, yA] = args;
  const d = dropoutParams('dropout', scalars);
  const x = floatCopyOf(xA!);
  const y = outputView(yA!);
  const keep = dropoutKeepMask(d.seed, d.offset, x.length, d.threshold);
  for (let i = 0; i < x.length; i++) y[i] = keep[i] === 1 ? x[i]! * d.scale : 0;
  storeFloat(yA!, y);
};
