/**
 * Shared checks and fallbacks of the Cholesky tile ops (potrf, trsm, syrk): row-major f32/f64 tiles,
 * lower triangle. The plain-TS loops only run when OpenBLAS is absent (tests on small tiles).
 */
import { TandemError } from '../../core/errors.js';
import { shapeStr } from '../../core/shape.js';
import type { TensorDesc } from '../../devices/device.js';
import type { CpuLapack } from '../../devices/cpu/kernel-api.js';
import type { CpuKernelContext } from '../../devices/cpu/kernel-api.js';
import { requireRank } from './validate.js';

export function requireTileFloat(op: string, name: string, d: TensorDesc): void {
  if (d.dtype !== 'f32' && d.dtype !== 'f64') {
    throw new TandemError('TANDEM_ERR_DTYPE', `${op}: ${name} must be f32 or f64, got ${d.dtype}`, {
      op,
      arg: name,
      dtype: d.dtype,
    });
  }
  requireRank(op, name, d, 2);
}

export function requireSquare(op: string, name: string, d: TensorDesc): number {
  if (d.shape[0] !== d.shape[1]) {
    throw new TandemError('TANDEM_ERR_SHAPE', `${op}: ${name} must be square, got ${shapeStr(d.shape)}`, {
      op,
      arg: name,
      shape: d.shape,
    });
  }
  return d.shape[0]!;
}

export function lapackOf(ctx: CpuKernelContext): CpuLapack | null {
  return ctx.blas !== null && ctx.gemmEngine === 'openblas' ? (ctx.lapack ?? null) : null;
}

type Arr = Float32Array | Float64Array;

/** In-place lower Cholesky of an n x n row-major tile; returns LAPACK-style info. */
export function potrfTs(n: number, a: Arr): number {
  for (let j = 0; j < n; j++) {
    let s = a[j * n + j]!;
    for (let k = 0; k < j; k++) s -= a[j * n + k]! * a[j * n + k]!;
    if (!(s > 0)) return j + 1;
    const d = Math.sqrt(s);
    a[j * n + j] = d;
    for (let i = j + 1; i < n; i++) {
      let v = a[i * n + j]!;
      for (let k = 0; k < j; k++) v -= a[i * n + k]! * a[j * n + k]!;
      a[i * n + j] = v / d;
    }
  }
  return 0;
}

/** B (m x n) := B · L^-T with L the n x n lower tile. */
export function trsmTs(m: number, n: number, l: Arr, b: Arr): void {
  for (let r = 0; r < m; r++) {
    const o = r * n;
    for (let j = 0; j < n; j++) {
      let v = b[o + j]!;
      for (let k = 0; k < j; k++) v -= b[o + k]! * l[j * n + k]!;
      b[o + j] = v / l[j * n + j]!;
    }
  }
}

/** Lower triangle of C (n x n) := beta·C + alpha·A·Aᵀ, A n x k. */
export function syrkTs(n: number, k: number, alpha: number, a: Arr, beta: number, c: Arr): void {
  for (let i = 0; i < n; i++) {
    for (let j = 0; j <= i; j++) {
      let s = 0;
      for (let p = 0; p < k; p++) s += a[i * k + p]! * a[j * k + p]!;
      c[i * n + j] = beta * c[i * n + j]! + alpha * s;
    }
  }
}
