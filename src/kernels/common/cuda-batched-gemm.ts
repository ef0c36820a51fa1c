/**
 * A strided batch of row-major GEMMs on CUDA: one cuBLASLt call where ctx.matmul takes it, otherwise
 * (no cuBLASLt, f64, declined) one ctx.gemm per product at its offsets. For kernels such as attention
 * that multiply many small matrices laid out at fixed strides.
 */
import { bytesPerElement } from '../../core/dtype.js';
import type { CudaGemmRequest, CudaKernelContext, CudaMatmulBatch } from '../../devices/cuda/kernel-api.js';

/** Product i reads a + i·strideA, b + i·strideB and writes c + i·strideC (strides in elements). */
export function batchedGemm(ctx: CudaKernelContext, req: CudaGemmRequest, batch: CudaMatmulBatch): void {
  if (batch.count === 0 || req.m === 0 || req.n === 0) return;
  if (req.precision === 'default' && ctx.matmul({ ...req, epilogue: 'none', batch })) return;
  const es = bytesPerElement(req.dtype);
  for (let i = 0; i < batch.count; i++) {
    ctx.gemm({
      ...req,
      a: req.a + i * batch.strideA * es,
      b: req.b + i * batch.strideB * es,
      c: req.c + i * batch.strideC * es,
    });
  }
}
