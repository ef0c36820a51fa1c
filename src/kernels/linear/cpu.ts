/**
 * CPU linear: the rows of the result start as the bias, then one gemm with beta = 1 adds x·wᵀ through
 * the worker's engine (OpenBLAS, wasm or TS). f16/bf16 decode to f32 and are rounded once on store.
 */
import type { CpuArg, CpuKernel, CpuKernelContext } from '../../devices/cpu/kernel-api.js';
import { type FloatArray, floatCopyOf, isHalf, storeFloat } from '../common/cpu-float.js';
import { floatGemm } from '../gemm/cpu.js';

/**
 * x·wᵀ + b unrounded: in `out`'s own storage for f32/f64 (already final there), in a new f32 array
 * for f16/bf16 (the caller stores it).
 */
export function linearForwardValues(
  ctx: CpuKernelContext,
  x: CpuArg,
  w: CpuArg,
  b: CpuArg,
  out: CpuArg,
): FloatArray {
  const [m, k] = x.desc.shape as [number, number];
  const n = w.desc.shape[0]!;
  const c = isHalf(out.desc.dtype) ? new Float32Array(m * n) : (out.data as FloatArray);
  const bias = floatCopyOf(b);
  for (let i = 0; i < m; i++) c.set(bias, i * n);
  floatGemm(
    ctx,
    { m, n, k, alpha: 1, beta: 1, transA: false, transB: true },
    floatCopyOf(x),
    floatCopyOf(w),
    c,
  );
  return c;
}

export const linearCpu: CpuKernel = (args, _scalars, ctx) => {
  const [x, w, b, y] = args as [CpuArg, CpuArg, CpuArg, CpuArg];
  storeFloat(y, linearForwardValues(ctx, x, w, b, y));
};
