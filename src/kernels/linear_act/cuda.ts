/**
 * linear_act on CUDA: GELU through cuBLASLt's GELU_AUX_BIAS epilogue (y = gelu(pre), pre stored as the
 * aux matrix) where cuBLASLt takes it; otherwise pre = linear(x, w, b) (fused bias or gemm + bias) and
 * the activation program reads pre. The GELU epilogue is kept to f16/bf16: it may use the hardware
 * tanh approximation, too coarse for f32 results. ReLU always takes the second path: cuBLASLt's RELU_AUX keeps a
 * bit mask, not the pre-activation this op's contract stores.
 */
import type { CudaArg, CudaNative } from '../../devices/cuda/kernel-api.js';
import { isHalf } from '../common/cpu-float.js';
import { enumScalar } from '../common/scalars.js';
import { activationCuda } from '../activation/cuda.js';
import { ACT_OPS } from '../activation/ops.js';
import { linearBiasForward } from '../linear/cuda.js';

export const linearActCuda: CudaNative = {
  kind: 'native',
  run(ctx, args, scalars) {
    const act = enumScalar('linear_act', scalars, 'act', ACT_OPS);
    const [x, w, b, pre, y] = args as [CudaArg, CudaArg, CudaArg, CudaArg, CudaArg];
    const [m, k] = x.desc.shape as [number, number];
    const n = w.desc.shape[0]!;
    if (m === 0 || n === 0) return;
    if (
      act === 'gelu' &&
      isHalf(x.desc.dtype) &&
      ctx.matmul({
        dtype: x.desc.dtype,
        transA: false,
        transB: true,
        m,
        n,
        k,
        alpha: 1,
        beta: 0,
        a: x.ptr,
        b: w.ptr,
        c: y.ptr,
        epilogue: 'gelu_aux_bias',
        bias: b.ptr,
        aux: pre.ptr,
      })
    )
      return;
    linearBiasForward(ctx, x, w, b, pre);
    ctx.launch(activationCuda, [pre, y], { op: act });
  },
};
