/** CPU trsm (B := B·L⁻ᵀ): BLAS strsm/dtrsm (right, lower, transposed, non-unit), the TS loop without it. */
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import { lapackOf, trsmTs } from '../common/tile.js';

export const trsmCpu: CpuKernel = (args, _scalars, ctx) => {
  const [a, b] = args as [CpuArg, CpuArg];
  const n = a.desc.shape[0]!;
  const m = b.desc.shape[0]!;
  if (m === 0 || n === 0) return;
  const lapack = lapackOf(ctx);
  if (a.desc.dtype === 'f64') {
    const [l, x] = [a.data as Float64Array, b.data as Float64Array];
    if (lapack) lapack.dtrsm('right', 'lower', true, false, m, n, 1, l, n, x, n);
    else trsmTs(m, n, l, x);
  } else {
    const [l, x] = [a.data as Float32Array, b.data as Float32Array];
    if (lapack) lapack.strsm('right', 'lower', true, false, m, n, 1, l, n, x, n);
    else trsmTs(m, n, l, x);
  }
};
