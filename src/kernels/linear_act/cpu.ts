/**
 * CPU linear_act: linear's bias-then-gemm into pre, then y = act(pre). For f16/bf16 the activation
 * reads the unrounded f32 pre (as a fused GPU epilogue does), and pre and y are each rounded once.
 */
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import { type FloatArray, isHalf, storeFloat } from '../common/cpu-float.js';
import { enumScalar } from '../common/scalars.js';
import { ACT_OPS, applyAct } from '../activation/ops.js';
import { linearForwardValues } from '../linear/cpu.js';

export const linearActCpu: CpuKernel = (args, scalars, ctx) => {
  const act = enumScalar('linear_act', scalars, 'act', ACT_OPS);
  const [x, w, b, pre, y] = args as [CpuArg, CpuArg, CpuArg, CpuArg, CpuArg];
  const p = linearForwardValues(ctx, x, w, b, pre);
  storeFloat(pre, p);
  const out: FloatArray = isHalf(y.desc.dtype) ? new Float32Array(p.length) : (y.data as FloatArray);
  applyAct(act, p, out, p.length);
  storeFloat(y, out);
};
