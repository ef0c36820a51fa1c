/** pool2d on the CPU: one pass over the windows; f16/bf16 decoded to f32 and rounded once on store. */
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import { type FloatArray, floatCopyOf, isHalf, storeFloat } from '../common/cpu-float.js';
import { poolGeometry } from './geometry.js';
import { forEachArgmax, forEachWindow } from './window.js';

export const pool2dCpu: CpuKernel = (args, scalars) => {
  const [x, y] = args as [CpuArg, CpuArg];
  const g = poolGeometry(x.desc.shape, scalars);
  const xf = floatCopyOf(x);
  const yf: FloatArray = isHalf(y.desc.dtype) ? new Float32Array(y.data.length) : (y.data as FloatArray);
  if (g.op === 'max') {
    forEachArgmax(g, xf, (out, at) => (yf[out] = xf[at]!));
  } else {
    const area = g.kernel * g.kernel;
    const W = g.w;
    forEachWindow(g, (out, plane, h0, h1, w0, w1) => {
      let sum = 0;
      for (let h = h0; h < h1; h++) for (let w = w0; w < w1; w++) sum += xf[plane + h * W + w]!;
      yf[out] = sum / area;
    });
  }
  storeFloat(y, yf);
};
