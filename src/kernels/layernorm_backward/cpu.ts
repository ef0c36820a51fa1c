import type { CpuKernel } from '../../devices/cpu/kernel-api.js';
import { type FloatArray, floatCopyOf, storeFloat } from '../common/cpu-float.js';
import { accumulateScalar } from '../common/norm-checks.js';

/** Row by row in JS doubles over f32-decoded f16/bf16 values; dw and db summed in f64 before one store. */
export const layernormBackwardCpu: CpuKernel = (args, scalars) => {
  const op = 'layernorm_backward';
  const [dyA, xA, wA, meanA, rstdA, dxA, dwA, dbA] = args;
  const x = floatCopyOf(xA!);
  const dy = floatCopyOf(dyA!);
  const w = floatCopyOf(wA!);
  const mean = meanA!.data as FloatArray;
  const rstd = rstdA!.data as FloatArray;
  const cols = w.length;
  const rows = x.length / cols;
  const acc = accumulateScalar(op, scalars);
  const accDx = accumulateScalar(op, scalars, 'accumulateDx');
  const dx = floatCopyOf(dxA!);
  const dw = floatCopyOf(dwA!);
  const db = floatCopyOf(dbA!);
  const sw = new Float64Array(cols);
  const sb = new Float64Array(cols);
  if (acc) {
    for (let j = 0; j < cols; j++) {
      sw[j] = dw[j]!;
      sb[j] = db[j]!;
    }
  }
  const xhat = new Float64Array(cols);
  for (let r = 0, base = 0; r < rows; r++, base += cols) {
    const mu = mean[r]!;
    const rs = rstd[r]!;
    let sg = 0;
    let sgx = 0;
    for (let j = 0; j < cols; j++) {
      const d = dy[base + j]!;
      const xh = (x[base + j]! - mu) * rs;
      xhat[j] = xh;
      const g = d * w[j]!;
      sg += g;
      sgx += g * xh;
      sw[j]! += d * xh;
      sb[j]! += d;
    }
    const a = sg / cols;
    const c = sgx / cols;
    for (let j = 0; j < cols; j++) {
      const v = rs * (dy[base + j]! * w[j]! - a - xhat[j]! * c);
      dx[base + j] = accDx ? dx[base + j]! + v : v;
    }
  }
  for (let j = 0; j < cols; j++) {
    dw[j] = sw[j]!;
    db[j] = sb[j]!;
  }
  storeFloat(dxA!, dx);
  storeFloat(dwA!, dw);
  storeFloat(dbA!, db);
};
