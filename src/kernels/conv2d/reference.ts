/** conv2d in float64, straight from the definition (one loop nest, no im2col): the oracle for every backend. */
import type { ReferenceFn } from '../common/reference.js';
import { convGeometry } from './geometry.js';

export const conv2dReference: ReferenceFn = (args, scalars) => {
  const g = convGeometry(args.x!.desc.shape, args.w!.desc.shape, scalars);
  const x = args.x!.values;
  const w = args.w!.values;
  const b = args.b!.values;
  const y = new Float64Array(g.n * g.o * g.ho * g.wo);
  for (let n = 0; n < g.n; n++) {
    for (let o = 0; o < g.o; o++) {
      for (let i = 0; i < g.ho; i++) {
        for (let j = 0; j < g.wo; j++) {
          let acc = b[o]!;
          for (let c = 0; c < g.c; c++) {
            for (let ki = 0; ki < g.kh; ki++) {
              const h = i * g.stride - g.padding + ki;
              if (h < 0 || h >= g.h) continue;
              for (let kj = 0; kj < g.kw; kj++) {
                const wc = j * g.stride - g.padding + kj;
                if (wc < 0 || wc >= g.w) continue;
                acc += x[((n * g.c + c) * g.h + h) * g.w + wc]! * w[((o * g.c + c) * g.kh + ki) * g.kw + kj]!;
              }
            }
          }
          y[((n * g.o + o) * g.ho + i) * g.wo + j] = acc;
        }
      }
    }
  }
  return { y };
};
