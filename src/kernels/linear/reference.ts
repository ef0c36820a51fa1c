import type { ReferenceFn } from '../common/reference.js';
import { gemmValues } from '../gemm/reference.js';

/** Float64 x·wᵀ + b for row-major x [m,k], w [n,k], b [n]. */
export function linearValues(
  x: Float64Array,
  w: Float64Array,
  b: Float64Array,
  m: number,
  n: number,
  k: number,
): Float64Array {
  const y = gemmValues(x, w, null, m, n, k, { alpha: 1, beta: 0, transA: false, transB: true });
  for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) y[i * n + j]! += b[j]!;
  return y;
}

export const linearReference: ReferenceFn = (args) => {
  const [m, k] = args.x!.desc.shape as [number, number];
  const n = args.w!.desc.shape[0]!;
  return { y: linearValues(args.x!.values, args.w!.values, args.b!.values, m, n, k) };
};
