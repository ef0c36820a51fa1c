import type { ReferenceFn } from '../common/reference.js';
import { epsScalar } from '../common/norm-checks.js';

export interface LayernormResult {
  readonly y: Float64Array;
  readonly mean: Float64Array;
  readonly rstd: Float64Array;
}

/** Float64 layer norm of `rows` rows of `cols` values (two passes: mean, then biased variance). */
export function layernormRows(
  x: Float64Array,
  w: Float64Array,
  b: Float64Array,
  cols: number,
  eps: number,
): LayernormResult {
  const rows = x.length / cols;
  const y = new Float64Array(x.length);
  const mean = new Float64Array(rows);
  const rstd = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    const base = r * cols;
    let s = 0;
    for (let j = 0; j < cols; j++) s += x[base + j]!;
    const mu = s / cols;
    let v = 0;
    for (let j = 0; j < cols; j++) v += (x[base + j]! - mu) ** 2;
    const rs = 1 / Math.sqrt(v / cols + eps);
    for (let j = 0; j < cols; j++) y[base + j] = (x[base + j]! - mu) * rs * w[j]! + b[j]!;
    mean[r] = mu;
    rstd[r] = rs;
  }
  return { y, mean, rstd };
}

export const layernormReference: ReferenceFn = (args, scalars) => {
  const x = args.x!;
  const cols = x.desc.shape[x.desc.shape.length - 1]!;
  const r = layernormRows(x.values, args.w!.values, args.b!.values, cols, epsScalar('layernorm', scalars));
  return { y: r.y, mean: r.mean, rstd: r.rstd };
};
