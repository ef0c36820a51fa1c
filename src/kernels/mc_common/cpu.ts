/** CPU implementation of mc_european / mc_asian: the f64 reference engine over each row's stream slice. */
import type { CpuKernel } from '../../devices/cpu/kernel-api.js';
import { mcRange } from './engine.js';
import { readMcScalars } from './def.js';

export function mcCpu(op: 'mc_european' | 'mc_asian'): CpuKernel {
  return (args, scalars) => {
    const { first, streams, spec } = readMcScalars(op, scalars);
    const out = args[0]!.data as Float32Array | Float64Array;
    const rows = args[0]!.desc.shape[0]!;
    const per = Math.ceil(streams / rows);
    for (let r = 0; r < rows; r++) {
      const a = first + Math.min(streams, r * per);
      const b = first + Math.min(streams, (r + 1) * per);
      const p = mcRange(spec, a, b);
      out[3 * r] = p.sum;
      out[3 * r + 1] = p.sumSq;
      out[3 * r + 2] = p.count;
    }
  };
}
