/** pool2d_backward in float64: each window's dy scattered back by the forward's rule. */
import type { ReferenceFn } from '../common/reference.js';
import { poolGeometry } from '../pool2d/geometry.js';

export const pool2dBackwardReference: ReferenceFn = (args, scalars) => {
  const g = poolGeometry(args.x!.desc.shape, scalars, 'pool2d_backward');
  const x = args.x!.values;
  const dy = args.dy!.values;
  const dx = new Float64Array(x.length);
  for (let nc = 0; nc < g.n * g.c; nc++) {
    for (let i = 0; i < g.ho; i++) {
      for (let j = 0; j < g.wo; j++) {
        const d = dy[(nc * g.ho + i) * g.wo + j]!;
        let best = -1;
        for (let ki = 0; ki < g.kernel; ki++) {
          for (let kj = 0; kj < g.kernel; kj++) {
            const h = i * g.stride - g.padding + ki;
            const w = j * g.stride - g.padding + kj;
            if (h < 0 || h >= g.h || w < 0 || w >= g.w) continue;
            const at = (nc * g.h + h) * g.w + w;
            if (g.op === 'avg') dx[at] += d / (g.kernel * g.kernel);
            else if (best < 0 || (!Number.isNaN(x[best]!) && (x[at]! > x[best]! || Number.isNaN(x[at]!))))
              best = at;
          }
        }
        if (g.op === 'max') dx[best] += d;
      }
    }
  }
  return { dx };
};
