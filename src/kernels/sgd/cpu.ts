import type { CpuKernel } from '../../devices/cpu/kernel-api.js';
import { forFloatChunks } from '../common/cpu-float.js';
import { gradFactor } from '../optim_common/grad-transform.js';
import { sgdParams } from './params.js';

/** SGD on the CPU: float64 arithmetic on the loaded values, one rounding on store. */
export const sgdCpu: CpuKernel = (args, scalars) => {
  const s = sgdParams('sgd', scalars);
  const factor = gradFactor(s, args[3]!.data[0]!);
  if (factor === null) return;
  const { scale, clip } = factor;
  const { weightDecay: wd, momentum: mu, nesterov, first } = s;
  const keep = 1 - s.dampening;
  const negLr = -s.lr;
  const useBuf = mu !== 0;
  forFloatChunks(args.slice(0, 3), [true, true, useBuf], [true, false, useBuf], ([p, g, buf], n) => {
    for (let i = 0; i < n; i++) {
      let d = g![i]! * scale * clip;
      if (wd !== 0) d = d + wd * p![i]!;
      if (useBuf) {
        const b = first ? d : buf![i]! * mu + keep * d;
        buf![i] = b;
        d = nesterov ? d + mu * b : b;
      }
      p![i] = p![i]! + negLr * d;
    }
  });
};
