import type { CpuKernel } from '../../devices/cpu/kernel-api.js';
import { forFloatChunks } from '../common/cpu-float.js';
import { type AdamWUpdateOf, adamwStep, scalarUpdate } from '../adamw/cpu.js';

/** adamw_mixed on the CPU: the update on the f32 master (float64 arithmetic), then p = round(master). */
export function adamwMixedCpuWith(updateOf: AdamWUpdateOf): CpuKernel {
  return (args, scalars) => {
    const step = adamwStep(updateOf, args, scalars, 5);
    if (step === null) return;
    const { c, scale, clip, decay, w, small, negStep } = step;
    // Order [master, g, m, v, p]: p is only written (encoded from the f32 master once per chunk).
    const ordered = [args[4]!, args[1]!, args[2]!, args[3]!, args[0]!];
    forFloatChunks(
      ordered,
      [true, true, true, true, false],
      [true, false, true, true, true],
      ([master, g, m, v, p], n) => {
        for (let i = 0; i < n; i++) {
          const gi = g![i]! * scale * clip;
          const mi = m![i]!;
          const diff = gi - mi;
          const m1 = small ? mi + w * diff : gi - diff * (1 - w);
          const v1 = v![i]! * c.beta2 + c.oneMinusBeta2 * gi * gi;
          m![i] = m1;
          v![i] = v1;
          master![i] = master![i]! * decay + negStep * (m1 / (Math.sqrt(v1) / c.bias2Sqrt + c.eps));
          p![i] = master![i]!;
        }
      },
    );
  };
}

export const adamwMixedCpu: CpuKernel = adamwMixedCpuWith(scalarUpdate('adamw_mixed'));
