/**
 * The plain TypeScript GEMM: the reference engine (always present) and the f64 engine when OpenBLAS is
 * absent. B is packed one column panel at a time into a contiguous float64 buffer that stays in L2
 * while every row of A streams past it; each C row segment accumulates in float64 in L1. Packing also
 * absorbs the transposes, so the hot loop is one monomorphic shape for every case.
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
  const panel = new Float64Array(k * PANEL);
  const aRow = new Float64Array(k);
  const acc = new Float64Array(PANEL);
  for (let j0 = 0; j0 < n; j0 += PANEL) {
    const nb = Math.min(PANEL, n - j0);
    for (let q = 0; q < k; q++) {
      const dst = q * nb;
      if (transB) for (let j = 0; j < nb; j++) panel[dst + j] = b[(j0 + j) * k + q]!;
      else for (let j = 0, src = q * n + j0; j < nb; j++) panel[dst + j] = b[src + j]!;
    }
    for (let i = 0; i < m; i++) {
      if (transA) for (let q = 0; q < k; q++) aRow[q] = a[q * m + i]!;
      else for (let q = 0, src = i * k; q < k; q++) aRow[q] = a[src + q]!;
      acc.fill(0);
      for (let q = 0; q < k; q++) {
        const aq = aRow[q]!;
        const base = q * nb;
        for (let j = 0; j < nb; j++) acc[j]! += aq * panel[base + j]!;
      }
      const row = i * n + j0;
      if (beta === 0) for (let j = 0; j < nb; j++) c[row + j] = alpha * acc[j]!;
      else for (let j = 0; j < nb; j++) c[row + j] = alpha * acc[j]! + beta * c[row + j]!;
    }
  }
}
