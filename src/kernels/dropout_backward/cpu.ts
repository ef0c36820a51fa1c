import type { CpuKernel } from '../../devices/cpu/kernel-api.js';
import { floatCopyOf, storeFloat } from '../common/cpu-float.js';
import { dropoutKeepMask } from '../dropout/mask.js';
import { accumulateScalar, dropoutParams } from '../common/norm-checks.js';

export const dropoutBackwardCpu: CpuKernel = (args, scalars) => {
  const [dyA, dxA] = args;
  const op = 'dropout_backward';
  const d = dropoutParams(op, scalars);
  const acc = accumulateScalar(op, scalars);
  const dy = floatCopyOf(dyA!);
  const dx = floatCopyOf(dxA!);
  const keep = dropoutKeepMask(d.seed, d.offset, dy.length, d.threshold);
  for (let i = 0; i < dy.length; i++) {
    const g = keep[i] === 1 ? dy[i]! * d.scale : 0;
    dx[i] = acc ? dx[i]! + g : g;
  }
  storeFloat(dxA!, dx);
};
