/** pool2d in float64 from the definition: every window position checked against the image bounds. */
import type { ReferenceFn } from '../common/reference.js';
import { poolGeometry } from './geometry.js';

export const pool2dReference: ReferenceFn = (args, scalars) => {
  const g = poolGeometry(args.x!.desc.shape, scalars);
  const x = args.x!.values;
  const y = new Float64Array(g.n * g.c * g.ho * g.wo);
  for (let nc = 0; nc < g.n * g.c; nc++) {
    for (let i = 0; i < g.ho; i++) {
      for (let j = 0; j < g.wo; j++) {
        let max = NaN;
        let seen = false;
        let sum = 0;
        for (let ki = 0; ki < g.kernel; ki++) {
          for (let kj = 0; kj < g.kernel; kj++) {
            const h = i * g.stride - g.padding + ki;
            const w = j * g.stride - g.padding + kj;
            if (h < 0 || h >= g.h || w < 0 || w >= g.w) continue;
            const v = x[(nc * g.h + h) * g.w + w]!;
            sum += v;
            // The first maximum; a NaN, once met, is the result.
            if (!seen || (!Number.isNaN(max) && (v > max || Number.isNaN(v)))) max = v;
            seen = true;
          }
        }
        y[(nc * g.ho + i) * g.wo + j] = g.op === 'max' ? max : sum / (g.kernel * g.kernel);
      }
    }
  }
  return { y };
};
