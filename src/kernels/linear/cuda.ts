/**
 * linear on CUDA: one cuBLASLt matmul with the BIAS epilogue where cuBLASLt takes it (f32/f16/bf16);
 * otherwise the bias is broadcast into y and a beta = 1 gemm adds x·wᵀ (one rounding for 16-bit types).
 */
import type { CudaArg, CudaKernelContext, CudaNative } from '../../devices/cuda/kernel-api.js';
import { biasRowsProgram } from './cuda-programs.js';

/** pre/y = x·wᵀ + b into `out`, fused when possible. */
export function linearBiasForward(
  ctx: CudaKernelContext,
  x: CudaArg,
  w: CudaArg,
  b: CudaArg,
  out: CudaArg,
): void {
  const [m, k] = x.desc.shape as [number, number];
  const n = w.desc.shape[0]!;
  if (m === 0 || n === 0) return;
  const product = {
    dtype: x.desc.dtype,
    transA: false,
    transB: true,
    m,
    n,
    k,
    alpha: 1,
    a: x.ptr,
    b: w.ptr,
    c: out.ptr,
  };
  if (ctx.matmul({ ...product, beta: 0, epilogue: 'bias', bias: b.ptr })) return;
  ctx.launch(biasRowsProgram, [b, out], {});
  ctx.gemm({ ...product, beta: 1, precision: 'default' });
}

export const linearCuda: CudaNative = {
  kind: 'native',
  run(ctx, args) {
    const [x, w, b, y] = args as [CudaArg, CudaArg, CudaArg, CudaArg];
    linearBiasForward(ctx, x, w, b, y);
  },
};
