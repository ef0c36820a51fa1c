import type { CpuKernel } from '../../devices/cpu/kernel-api.js';
import { forFloatChunks } from '../common/cpu-float.js';
import { gradFactor } from '../optim_common/grad-transform.js';
import { adamwConstants, adamwParams } from './params.js';

/** AdamW on the CPU: float64 arithmetic on the loaded values, one rounding on store. */
export const adamwCpu: CpuKernel = (args, scalars) => {
  const params = adamwParams('adamw', scalars);
  const factor = gradFactor(params, args[4]!.data[0]!);
  if (factor === null) return;
  const c = adamwConstants(params);
  const decay = params.weightDecay !== 0 ? c.decay : 1;
  const w = c.lerpWeight;
  const small = Math.abs(w) < 0.5;
  const negStep = -c.stepSize;
  forFloatChunks(args.slice(0, 4), [true, true, true, true], [true, false, true, true], ([p, g, m, v], n) => {
    for (let i = 0; i < n; i++) {
      const gi = g![i]! * factor.scale * factor.clip;
      const mi = m![i]!;
      const diff = gi - mi;
      const m1 = small ? mi + w * diff : gi - diff * (1 - w);
      const v1 = v![i]! * c.beta2 + c.oneMinusBeta2 * gi * gi;
      m![i] = m1;
      v![i] = v1;
      p![i] = p![i]! * decay + negStep * (m1 / (Math.sqrt(v1) / c.bias2Sqrt + c.eps));
    }
  });
};
