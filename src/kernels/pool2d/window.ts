/**
 * The pooling windows of one call, walked plane by plane with the geometry in locals (the CPU
 * kernels' hot loop): `visit` gets each window's output index and either the index in x of its first
 * maximum (row-major window order; a NaN, once met, is kept) or the sum of its elements.
 */
import type { FloatArray } from '../common/cpu-float.js';
import type { PoolGeometry } from './geometry.js';

/** Calls visit(outputIndex, argmaxIndexInX) for every window. */
export function forEachArgmax(
  g: PoolGeometry,
  x: FloatArray,
  visit: (out: number, at: number) => void,
): void {
  const { h: H, w: W, ho: HO, wo: WO, kernel: K, stride: S, padding: PAD } = g;
  let out = 0;
  for (let nc = 0; nc < g.n * g.c; nc++) {
    const plane = nc * H * W;
    for (let i = 0; i < HO; i++) {
      const h0 = Math.max(i * S - PAD, 0);
      const h1 = Math.min(i * S - PAD + K, H);
      for (let j = 0; j < WO; j++, out++) {
        const w0 = Math.max(j * S - PAD, 0);
        const w1 = Math.min(j * S - PAD + K, W);
        let best = plane + h0 * W + w0;
        let bv = x[best]!;
        for (let h = h0; h < h1; h++) {
          const row = plane + h * W;
          for (let w = w0; w < w1; w++) {
            const v = x[row + w]!;
            if (v > bv || (v !== v && bv === bv)) {
              best = row + w;
              bv = v;
            }
          }
        }
        visit(out, best);
      }
    }
  }
}

/** Calls visit(outputIndex, h0, h1, w0, w1, plane) for every window (its clipped bounds in x). */
export function forEachWindow(
  g: PoolGeometry,
  visit: (out: number, plane: number, h0: number, h1: number, w0: number, w1: number) => void,
): void {
  const { h: H, w: W, ho: HO, wo: WO, kernel: K, stride: S, padding: PAD } = g;
  let out = 0;
  for (let nc = 0; nc < g.n * g.c; nc++) {
    const plane = nc * H * W;
    for (let i = 0; i < HO; i++) {
      const h0 = Math.max(i * S - PAD, 0);
      const h1 = Math.min(i * S - PAD + K, H);
      for (let j = 0; j < WO; j++, out++) {
        visit(out, plane, h0, h1, Math.max(j * S - PAD, 0), Math.min(j * S - PAD + K, W));
      }
    }
  }
}
