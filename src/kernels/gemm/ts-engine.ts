/**
 * The plain TypeScript GEMM: the reference engine (always present) and the f64 engine when OpenBLAS is
 * absent. B is packed one column panel at a time into a contiguous float64 buffer that stays in L2,
 * A four rows at a time; a 4x4 block of C accumulates in float64 locals over the whole k loop. Packing
 * also absorbs the transposes and pads edges with zeros, so the hot loop is monomorphic (float64 only)
 * whatever the dtype and transposes.
 */
import type { FloatArray } from '../common/cpu-float.js';

/** Columns of B per packed panel: k x 128 doubles is 512 KiB at k = 512, within L2. */
const PANEL = 128;

export interface GemmCall {
  readonly m: number;
  readonly n: number;
  readonly k: number;
  readonly alpha: number;
  readonly beta: number;
  readonly transA: boolean;
  readonly transB: boolean;
}

/** Applies C = beta * C for the degenerate k = 0 case (beta = 0 clears C, ignoring NaN in it). */
export function scaleC(c: FloatArray, count: number, beta: number): void {
  if (beta === 0) c.fill(0, 0, count);
  else if (beta !== 1) for (let i = 0; i < count; i++) c[i]! *= beta;
}

export function gemmTs(g: GemmCall, a: FloatArray, b: FloatArray, c: FloatArray): void {
  const { m, n, k, alpha, beta, transA, transB } = g;
  if (m === 0 || n === 0) return;
  if (k === 0) {
    scaleC(c, m * n, beta);
    return;
  }
  const panelWidth = Math.min(PANEL, roundUp4(n));
  const panel = new Float64Array(k * panelWidth);
  const aPack = new Float64Array(4 * k);
  const tile = new Float64Array(16);
  for (let j0 = 0; j0 < n; j0 += PANEL) {
    const nb = Math.min(PANEL, n - j0);
    const nbp = roundUp4(nb);
    packB(b, transB, n, k, j0, nb, nbp, panel);
    for (let i0 = 0; i0 < m; i0 += 4) {
      const mr = Math.min(4, m - i0);
      packA(a, transA, m, k, i0, mr, aPack);
      for (let jj = 0; jj < nbp; jj += 4) {
        tile4x4(aPack, panel, k, nbp, jj, tile);
        const nr = Math.min(4, nb - jj);
        for (let r = 0; r < mr; r++) {
          const row = (i0 + r) * n + j0 + jj;
          for (let q = 0; q < nr; q++) {
            const v = alpha * tile[r * 4 + q]!;
            c[row + q] = beta === 0 ? v : v + beta * c[row + q]!;
          }
        }
      }
    }
  }
}

function roundUp4(x: number): number {
  return (x + 3) & ~3;
}

/** B columns j0..j0+nb of op(B) as [k][nbp] float64, zero beyond nb. */
function packB(
  b: FloatArray,
  transB: boolean,
  n: number,
  k: number,
  j0: number,
  nb: number,
  nbp: number,
  panel: Float64Array,
): void {
  panel.fill(0, 0, k * nbp);
  for (let q = 0; q < k; q++) {
    const dst = q * nbp;
    if (transB) for (let j = 0; j < nb; j++) panel[dst + j] = b[(j0 + j) * k + q]!;
    else for (let j = 0, src = q * n + j0; j < nb; j++) panel[dst + j] = b[src + j]!;
  }
}

/** Rows i0..i0+mr of op(A) interleaved as [k][4] float64, zero beyond mr. */
function packA(
  a: FloatArray,
  transA: boolean,
  m: number,
  k: number,
  i0: number,
  mr: number,
  aPack: Float64Array,
): void {
  aPack.fill(0);
  for (let r = 0; r < mr; r++) {
    const i = i0 + r;
    if (transA) for (let q = 0; q < k; q++) aPack[q * 4 + r] = a[q * m + i]!;
    else for (let q = 0, src = i * k; q < k; q++) aPack[q * 4 + r] = a[src + q]!;
  }
}

/** A 4x4 block of A*B held in 16 locals across the whole k loop: 8 loads per 32 flops. */
function tile4x4(
  aPack: Float64Array,
  panel: Float64Array,
  k: number,
  nbp: number,
  jj: number,
  tile: Float64Array,
): void {
  let c00 = 0,
    c01 = 0,
    c02 = 0,
    c03 = 0,
    c10 = 0,
    c11 = 0,
    c12 = 0,
    c13 = 0;
  let c20 = 0,
    c21 = 0,
    c22 = 0,
    c23 = 0,
    c30 = 0,
    c31 = 0,
    c32 = 0,
    c33 = 0;
  for (let q = 0, ap = 0, bp = jj; q < k; q++, ap += 4, bp += nbp) {
    const a0 = aPack[ap]!,
      a1 = aPack[ap + 1]!,
      a2 = aPack[ap + 2]!,
      a3 = aPack[ap + 3]!;
    const b0 = panel[bp]!,
      b1 = panel[bp + 1]!,
      b2 = panel[bp + 2]!,
      b3 = panel[bp + 3]!;
    c00 += a0 * b0;
    c01 += a0 * b1;
    c02 += a0 * b2;
    c03 += a0 * b3;
    c10 += a1 * b0;
    c11 += a1 * b1;
    c12 += a1 * b2;
    c13 += a1 * b3;
    c20 += a2 * b0;
    c21 += a2 * b1;
    c22 += a2 * b2;
    c23 += a2 * b3;
    c30 += a3 * b0;
    c31 += a3 * b1;
    c32 += a3 * b2;
    c33 += a3 * b3;
  }
  tile[0] = c00;
  tile[1] = c01;
  tile[2] = c02;
  tile[3] = c03;
  tile[4] = c10;
  tile[5] = c11;
  tile[6] = c12;
  tile[7] = c13;
  tile[8] = c20;
  tile[9] = c21;
  tile[10] = c22;
  tile[11] = c23;
  tile[12] = c30;
  tile[13] = c31;
  tile[14] = c32;
  tile[15] = c33;
}
