/** gemm on CUDA: cuBLAS (cublasGemmEx) on row-major tensors, fp32 accumulation for f16/bf16. */
import type { CudaNative } from '../../devices/cuda/kernel-api.js';
import { gemmDims, gemmParams } from './params.js';

export const gemmCuda: CudaNative = {
  kind: 'native',
  run(ctx, args, scalars) {
    const [a, b, c] = args;
    const p = gemmParams(scalars);
    const { m, n, k } = gemmDims(a!.desc, b!.desc, p);
    ctx.gemm({
      dtype: a!.desc.dtype,
      precision: p.precision,
      transA: p.transA,
      transB: p.transB,
      m,
      n,
      k,
      alpha: p.alpha,
      beta: p.beta,
      a: a!.ptr,
      b: b!.ptr,
      c: c!.ptr,
    });
  },
};
