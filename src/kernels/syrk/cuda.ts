/** CUDA syrk (lower C := beta·C + alpha·A·Aᵀ): cuBLAS s/dsyrk, mapped from row-major in tile-ops.ts. */
import type { CudaArg, CudaNative } from '../../devices/cuda/kernel-api.js';
import { numberScalar } from '../common/scalars.js';

export const syrkCuda: CudaNative = {
  kind: 'native',
  run(ctx, args, scalars) {
    const [a, c] = args as [CudaArg, CudaArg];
    ctx.tile({
      op: 'syrk',
      dtype: c.desc.dtype === 'f64' ? 'f64' : 'f32',
      n: c.desc.shape[0]!,
      k: a.desc.shape[1]!,
      alpha: numberScalar('syrk', scalars, 'alpha', 1),
      beta: numberScalar('syrk', scalars, 'beta', 1),
      a: a.ptr,
      c: c.ptr,
    });
  },
};
