import { fromNumbers, hostView, toNumbers } from '../../core/dtype.js';
import type { ReferenceFn } from '../common/reference.js';
import { layernormRows } from '../layernorm/reference.js';
import { epsScalar } from '../common/norm-checks.js';

/** s is rounded to its dtype before the normalization, as every implementation stores and reads it. */
export const residualLayernormReference: ReferenceFn = (args, scalars) => {
  const a = args.a!;
  const exact = a.values.map((v, i) => v + args.r!.values[i]!);
  const stored = hostView(a.desc.dtype, new ArrayBuffer(a.desc.bytes), 0, exact.length);
  fromNumbers(a.desc.dtype, exact, stored);
  const s = toNumbers(a.desc.dtype, stored);
  const cols = a.desc.shape[a.desc.shape.length - 1]!;
  const eps = epsScalar('residual_layernorm', scalars);
  const r = layernormRows(s, args.w!.values, args.b!.values, cols, eps);
  return { s, y: r.y, mean: r.mean, rstd: r.rstd };
};
