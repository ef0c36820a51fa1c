import type { ReferenceFn } from '../common/reference.js';
import { type GemmParams, gemmDims, gemmParams } from './params.js';

/** Float64 gemm on row-major arrays: the definition of the result every engine is checked against. */
export function gemmValues(
  a: Float64Array,
  b: Float64Array,
  c: Float64Array | null,
  m: number,
  n: number,
  k: number,
  p: Pick<GemmParams, 'alpha' | 'beta' | 'transA' | 'transB'>,
): Float64Array {
  const out = new Float64Array(m * n);
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let q = 0; q < k; q++) {
        s += (p.transA ? a[q * m + i]! : a[i * k + q]!) * (p.transB ? b[j * k + q]! : b[q * n + j]!);
      }
      // beta = 0 ignores C entirely (BLAS convention), so NaN in an uninitialised C does not leak.
      out[i * n + j] = p.alpha * s + (p.beta === 0 || c === null ? 0 : p.beta * c[i * n + j]!);
    }
  }
  return out;
}

export const gemmReference: ReferenceFn = (args, scalars) => {
  const p = gemmParams(scalars);
  const { m, n, k } = gemmDims(args.a!.desc, args.b!.desc, p);
  return { c: gemmValues(args.a!.values, args.b!.values, args.c!.values, m, n, k, p) };
};
