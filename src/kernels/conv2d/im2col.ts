/**
 * The column layout of one image for convolution as a GEMM: col[(c·kh + ki)·kw + kj][i·Wo + j] =
 * x[c][i·stride − padding + ki][j·stride − padding + kj] (0 outside the image). Then
 * y_n[O, Ho·Wo] = w[O, C·kh·kw] · col, and the backward pass is two more GEMMs plus col2im.
 */
import type { FloatArray } from '../common/cpu-float.js';
import type { ConvGeometry } from './geometry.js';

/** Fills `col` ([C·kh·kw, Ho·Wo]) from image `n` of `x`. */
export function im2col(g: ConvGeometry, x: FloatArray, n: number, col: FloatArray): void {
  const plane = g.h * g.w;
  const p = g.ho * g.wo;
  for (let c = 0; c < g.c; c++) {
    const xBase = (n * g.c + c) * plane;
    for (let ki = 0; ki < g.kh; ki++) {
      for (let kj = 0; kj < g.kw; kj++) {
        const row = ((c * g.kh + ki) * g.kw + kj) * p;
        for (let i = 0; i < g.ho; i++) {
          const h = i * g.stride - g.padding + ki;
          const out = row + i * g.wo;
          if (h < 0 || h >= g.h) {
            col.fill(0, out, out + g.wo);
            continue;
          }
          const xRow = xBase + h * g.w;
          for (let j = 0; j < g.wo; j++) {
            const wc = j * g.stride - g.padding + kj;
            col[out + j] = wc < 0 || wc >= g.w ? 0 : x[xRow + wc]!;
          }
        }
      }
    }
  }
}

/** Adds the columns back onto image `n` of `dx` (which the caller cleared): the transpose of im2col. */
export function col2imAdd(g: ConvGeometry, col: FloatArray, dx: FloatArray, n: number): void {
  const plane = g.h * g.w;
  const p = g.ho * g.wo;
  for (let c = 0; c < g.c; c++) {
    const xBase = (n * g.c + c) * plane;
    for (let ki = 0; ki < g.kh; ki++) {
      for (let kj = 0; kj < g.kw; kj++) {
        const row = ((c * g.kh + ki) * g.kw + kj) * p;
        for (let i = 0; i < g.ho; i++) {
          const h = i * g.stride - g.padding + ki;
          if (h < 0 || h >= g.h) continue;
          const xRow = xBase + h * g.w;
          const from = row + i * g.wo;
          for (let j = 0; j < g.wo; j++) {
            const wc = j * g.stride - g.padding + kj;
            if (wc >= 0 && wc < g.w) dx[xRow + wc]! += col[from + j]!;
          }
        }
      }
    }
  }
}
