/** CPU linear_dx_act: dy·w through the worker's gemm engine, then dx = act′(pre) ⊙ that, in place. */
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import { type FloatArray, floatCopyOf, isHalf, storeFloat } from '../common/cpu-float.js';
import { enumScalar } from '../common/scalars.js';
import { ACT_OPS, applyActGrad } from '../activation/ops.js';
import { floatGemm } from '../gemm/cpu.js';

export const linearDxActCpu: CpuKernel = (args, scalars, ctx) => {
  const act = enumScalar('linear_dx_act', scalars, 'act', ACT_OPS);
  const [dy, w, pre, dx] = args as [CpuArg, CpuArg, CpuArg, CpuArg];
  const [m, n] = dy.desc.shape as [number, number];
  const k = w.desc.shape[1]!;
  const t: FloatArray = isHalf(dx.desc.dtype) ? new Float32Array(m * k) : (dx.data as FloatArray);
  floatGemm(
    ctx,
    { m, n: k, k: n, alpha: 1, beta: 0, transA: false, transB: false },
    floatCopyOf(dy),
    floatCopyOf(w),
    t,
  );
  applyActGrad(act, floatCopyOf(pre), t, t, m * k, false);
  storeFloat(dx, t);
};
