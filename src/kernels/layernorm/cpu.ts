import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import { type FloatArray, floatCopyOf, isHalf, storeFloat } from '../common/cpu-float.js';
import { epsScalar } from '../common/norm-checks.js';

/** An output view: the tensor itself for f32/f64, f32 scratch (encoded by storeFloat) for f16/bf16. */
export function outputView(arg: CpuArg): FloatArray {
  return isHalf(arg.desc.dtype) ? new Float32Array(arg.data.length) : (arg.data as FloatArray);
}

/**
 * Layer norm of each row of x into y, mean and rstd (f16/bf16 decoded to f32; the sums run in JS
 * doubles, so the statistics are at least as accurate as an f32 accumulation). Shared with
 * residual_layernorm.
 */
export function layernormRowsCpu(
  x: FloatArray,
  w: FloatArray,
  b: FloatArray,
  y: FloatArray,
  mean: FloatArray,
  rstd: FloatArray,
  cols: number,
  eps: number,
): void {
  const rows = x.length / cols;
  for (let r = 0, base = 0; r < rows; r++, base += cols) {
    let s = 0;
    for (let j = 0; j < cols; j++) s += x[base + j]!;
    const mu = s / cols;
    let v = 0;
    for (let j = 0; j < cols; j++) {
      const d = x[base + j]! - mu;
      v += d * d;
    }
    const rs = 1 / Math.sqrt(v / cols + eps);
    for (let j = 0; j < cols; j++) y[base + j] = (x[base + j]! - mu) * rs * w[j]! + b[j]!;
    mean[r] = mu;
    rstd[r] = rs;
  }
}

export const layernormCpu: CpuKernel = (args, scalars) => {
  const [xA, wA, bA, yA, meanA, rstdA] = args;
  const cols = xA!.desc.shape[xA!.desc.shape.length - 1]!;
  const y = outputView(yA!);
  layernormRowsCpu(
    floatCopyOf(xA!),
    floatCopyOf(wA!),
    floatCopyOf(bA!),
    y,
    meanA!.data as FloatArray,
    rstdA!.data as FloatArray,
    cols,
    epsScalar('layernorm', scalars),
  );
  storeFloat(yA!, y);
};
