/**
 * One pooling window, shared by the float64 references and the CPU kernels so both pick the same
 * element: the first maximum in row-major window order (a NaN wins and stays), or the sum.
 */
import type { FloatArray } from '../common/cpu-float.js';
import type { PoolGeometry } from './geometry.js';

/** Index into x of the window's (first) maximum; the window always holds one element (padding ≤ kernel/2). */
export function windowArgmax(
  g: PoolGeometry,
  x: ArrayLike<number>,
  plane: number,
  i: number,
  j: number,
): number {
  let best = -1;
  let bestValue = -Infinity;
  const h0 = i * g.stride - g.padding;
  const w0 = j * g.stride - g.padding;
  for (let h = Math.max(h0, 0); h < Math.min(h0 + g.kernel, g.h); h++) {
    for (let w = Math.max(w0, 0); w < Math.min(w0 + g.kernel, g.w); w++) {
      const at = plane + h * g.w + w;
      const v = x[at]!;
      if (best < 0 || v > bestValue || (Number.isNaN(v) && !Number.isNaN(bestValue))) {
        best = at;
        bestValue = v;
      }
    }
  }
  return best;
}

/** Σ of the window's elements inside x (padding adds zeros). */
export function windowSum(g: PoolGeometry, x: FloatArray, plane: number, i: number, j: number): number {
  let sum = 0;
  const h0 = i * g.stride - g.padding;
  const w0 = j * g.stride - g.padding;
  for (let h = Math.max(h0, 0); h < Math.min(h0 + g.kernel, g.h); h++) {
    for (let w = Math.max(w0, 0); w < Math.min(w0 + g.kernel, g.w); w++) sum += x[plane + h * g.w + w]!;
  }
  return sum;
}
