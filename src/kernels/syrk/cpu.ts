/** CPU syrk (lower C := beta·C + alpha·A·Aᵀ): BLAS ssyrk/dsyrk, the TS loop without it. */
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import { numberScalar } from '../common/scalars.js';
import { lapackOf, syrkTs } from '../common/tile.js';

export const syrkCpu: CpuKernel = (args, scalars, ctx) => {
  const [a, c] = args as [CpuArg, CpuArg];
  const n = c.desc.shape[0]!;
  const k = a.desc.shape[1]!;
  if (n === 0) return;
  const alpha = numberScalar('syrk', scalars, 'alpha', 1);
  const beta = numberScalar('syrk', scalars, 'beta', 1);
  const lapack = lapackOf(ctx);
  if (c.desc.dtype === 'f64') {
    const [x, y] = [a.data as Float64Array, c.data as Float64Array];
    if (lapack && k > 0) lapack.dsyrk('lower', false, n, k, alpha, x, k, beta, y, n);
    else syrkTs(n, k, alpha, x, beta, y);
  } else {
    const [x, y] = [a.data as Float32Array, c.data as Float32Array];
    if (lapack && k > 0) lapack.ssyrk('lower', false, n, k, alpha, x, k, beta, y, n);
    else syrkTs(n, k, alpha, x, beta, y);
  }
};
