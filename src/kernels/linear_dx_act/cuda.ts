/**
 * linear_dx_act on CUDA: GELU through cuBLASLt's DGELU epilogue (dx = gelu′(pre) ⊙ dy·w, pre as the
 * aux input) for f16/bf16 where cuBLASLt takes it (f32 keeps full precision: the epilogue may use
 * the hardware tanh approximation); otherwise gemm into dx and the activation-gradient program
 * applied in place.
 */
import type { CudaArg, CudaNative } from '../../devices/cuda/kernel-api.js';
import { isHalf } from '../common/cpu-float.js';
import { enumScalar } from '../common/scalars.js';
import { ACT_OPS } from '../activation/ops.js';
import { activationGradProgram } from '../activation_backward/cuda.js';

const GRAD_IN_PLACE = activationGradProgram('linear_dx_act', 'act');

export const linearDxActCuda: CudaNative = {
  kind: 'native',
  run(ctx, args, scalars) {
    const act = enumScalar('linear_dx_act', scalars, 'act', ACT_OPS);
    const [dy, w, pre, dx] = args as [CudaArg, CudaArg, CudaArg, CudaArg];
    const [m, n] = dy.desc.shape as [number, number];
    const k = w.desc.shape[1]!;
    if (m === 0 || k === 0) return;
    // Row-major dx [m,k] = dy [m,n] · w [n,k]: the product's inner size is n.
    const product = {
      dtype: dy.desc.dtype,
      transA: false,
      transB: false,
      m,
      n: k,
      k: n,
      alpha: 1,
      beta: 0,
      a: dy.ptr,
      b: w.ptr,
      c: dx.ptr,
    };
    if (
      act === 'gelu' &&
      isHalf(dy.desc.dtype) &&
      ctx.matmul({ ...product, epilogue: 'dgelu', aux: pre.ptr })
    )
      return;
    ctx.gemm({ ...product, precision: 'default' });
    ctx.launch(GRAD_IN_PLACE, [pre, dx, dx], { act });
  },
};
