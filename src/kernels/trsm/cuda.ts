/** CUDA trsm (B := B·L⁻ᵀ): cuBLAS s/dtrsm, mapped from row-major in src/devices/cuda/tile-ops.ts. */
import type { CudaArg, CudaNative } from '../../devices/cuda/kernel-api.js';

export const trsmCuda: CudaNative = {
  kind: 'native',
  run(ctx, args) {
    const [a, b] = args as [CudaArg, CudaArg];
    ctx.tile({
      op: 'trsm',
      dtype: a.desc.dtype === 'f64' ? 'f64' : 'f32',
      m: b.desc.shape[0]!,
      n: a.desc.shape[0]!,
      a: a.ptr,
      b: b.ptr,
    });
  },
};
