/** conv2d_backward in float64, straight from the forward's loop nest (every product scattered back). */
import type { ReferenceFn } from '../common/reference.js';
import { boolScalar } from '../common/scalars.js';
import { convGeometry } from '../conv2d/geometry.js';

export const conv2dBackwardReference: ReferenceFn = (args, scalars) => {
  const g = convGeometry(args.x!.desc.shape, args.w!.desc.shape, scalars, 'conv2d_backward');
  const accumulate = boolScalar('conv2d_backward', scalars, 'accumulate', false);
  const dy = args.dy!.values;
  const x = args.x!.values;
  const w = args.w!.values;
  const dx = new Float64Array(x.length);
  const dw = accumulate ? Float64Array.from(args.dw!.values) : new Float64Array(w.length);
  const db = accumulate ? Float64Array.from(args.db!.values) : new Float64Array(g.o);
  for (let n = 0; n < g.n; n++) {
    for (let o = 0; o < g.o; o++) {
      for (let i = 0; i < g.ho; i++) {
        for (let j = 0; j < g.wo; j++) {
          const d = dy[((n * g.o + o) * g.ho + i) * g.wo + j]!;
          db[o] += d;
          for (let c = 0; c < g.c; c++) {
            for (let ki = 0; ki < g.kh; ki++) {
              const h = i * g.stride - g.padding + ki;
              if (h < 0 || h >= g.h) continue;
              for (let kj = 0; kj < g.kw; kj++) {
                const wc = j * g.stride - g.padding + kj;
                if (wc < 0 || wc >= g.w) continue;
                const xi = ((n * g.c + c) * g.h + h) * g.w + wc;
                const wi = ((o * g.c + c) * g.kh + ki) * g.kw + kj;
                dx[xi] += d * w[wi]!;
                dw[wi] += d * x[xi]!;
              }
            }
          }
        }
      }
    }
  }
  return { dx, dw, db };
};
