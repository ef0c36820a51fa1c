/**
 * linear_dw on CUDA: dw = dyᵀ·x with the bias gradient fused (cuBLASLt's BGRADB) when overwriting and
 * cuBLASLt takes it; otherwise (accumulate, f64, declined shapes) a gemm with beta = 0 or 1 and the
 * column-sum program, which adds to db when accumulating.
 */
import type { CudaArg, CudaNative } from '../../devices/cuda/kernel-api.js';
import { columnSumProgram } from '../linear/cuda-programs.js';
import { accumulateOf } from './def.js';

export const linearDwCuda: CudaNative = {
  kind: 'native',
  run(ctx, args, scalars) {
    const accumulate = accumulateOf('linear_dw', scalars);
    const [dy, x, dw, db] = args as [CudaArg, CudaArg, CudaArg, CudaArg];
    const [m, n] = dy.desc.shape as [number, number];
    const k = x.desc.shape[1]!;
    if (n === 0) return;
    // Row-major dw [n,k] = dyᵀ [n,m] · x [m,k]: dy is read transposed, the inner size is m.
    const product = {
      dtype: dy.desc.dtype,
      transA: true,
      transB: false,
      m: n,
      n: k,
      k: m,
      alpha: 1,
      beta: accumulate ? 1 : 0,
      a: dy.ptr,
      b: x.ptr,
      c: dw.ptr,
    };
    if (!accumulate && ctx.matmul({ ...product, epilogue: 'bgrad', bias: db.ptr })) return;
    ctx.gemm({ ...product, precision: 'default' });
    ctx.launch(columnSumProgram, [dy, db], { accumulate });
  },
};
