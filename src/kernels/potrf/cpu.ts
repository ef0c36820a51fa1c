/** CPU potrf: LAPACK spotrf/dpotrf through the worker's OpenBLAS, the TS loop without it. */
import { TandemError } from '../../core/errors.js';
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import { lapackOf, potrfTs } from '../common/tile.js';

export const potrfCpu: CpuKernel = (args, _scalars, ctx) => {
  const a = args[0] as CpuArg;
  const n = a.desc.shape[0]!;
  const lapack = lapackOf(ctx);
  let info: number;
  if (a.desc.dtype === 'f64') {
    const x = a.data as Float64Array;
    info = lapack ? lapack.dpotrf('lower', n, x, n) : potrfTs(n, x);
  } else {
    const x = a.data as Float32Array;
    info = lapack ? lapack.spotrf('lower', n, x, n) : potrfTs(n, x);
  }
  if (info !== 0) {
    throw new TandemError(
      'TANDEM_ERR_KERNEL_FAILED',
      `potrf: the tile is not positive definite (leading minor ${info} of ${n})`,
      { info },
    );
  }
};
