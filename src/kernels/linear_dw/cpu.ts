/**
 * CPU linear_dw: dyᵀ·x through the worker's gemm engine (beta = 1 to accumulate), and the column sums
 * of dy accumulated in float64. f16/bf16 decode to f32 and are rounded once on store.
 */
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import { type FloatArray, floatCopyOf, isHalf, storeFloat } from '../common/cpu-float.js';
import { floatGemm } from '../gemm/cpu.js';
import { accumulateOf } from './def.js';

/** The result array: the tensor itself for f32/f64, a decoded (or, when overwriting, zero) f32 copy otherwise. */
function outputView(arg: CpuArg, accumulate: boolean): FloatArray {
  if (!isHalf(arg.desc.dtype)) return arg.data as FloatArray;
  return accumulate ? floatCopyOf(arg) : new Float32Array(arg.data.length);
}

export const linearDwCpu: CpuKernel = (args, scalars, ctx) => {
  const accumulate = accumulateOf('linear_dw', scalars);
  const [dy, x, dw, db] = args as [CpuArg, CpuArg, CpuArg, CpuArg];
  const [m, n] = dy.desc.shape as [number, number];
  const k = x.desc.shape[1]!;
  const g = floatCopyOf(dy);
  const w = outputView(dw, accumulate);
  floatGemm(
    ctx,
    { m: n, n: k, k: m, alpha: 1, beta: accumulate ? 1 : 0, transA: true, transB: false },
    g,
    floatCopyOf(x),
    w,
  );
  storeFloat(dw, w);
  const sums = new Float64Array(n);
  for (let i = 0; i < m; i++) {
    const row = i * n;
    for (let j = 0; j < n; j++) sums[j]! += g[row + j]!;
  }
  const b = outputView(db, accumulate);
  for (let j = 0; j < n; j++) b[j] = accumulate ? b[j]! + sums[j]! : sums[j]!;
  storeFloat(db, b);
};
