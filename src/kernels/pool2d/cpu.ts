/** pool2d on the CPU: one pass over the windows; f16/bf16 decoded to f32 and rounded once on store. */
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import { type FloatArray, floatCopyOf, isHalf, storeFloat } from '../common/cpu-float.js';
import { poolGeometry } from './geometry.js';
import { windowArgmax, windowSum } from './window.js';

export const pool2dCpu: CpuKernel = (args, scalars) => {
  const [x, y] = args as [CpuArg, CpuArg];
  const g = poolGeometry(x.desc.shape, scalars);
  const xf = floatCopyOf(x);
  const yf: FloatArray = isHalf(y.desc.dtype) ? new Float32Array(y.data.length) : (y.data as FloatArray);
  const area = g.kernel * g.kernel;
  for (let nc = 0; nc < g.n * g.c; nc++) {
    const plane = nc * g.h * g.w;
    for (let i = 0; i < g.ho; i++) {
      for (let j = 0; j < g.wo; j++) {
        const at = (nc * g.ho + i) * g.wo + j;
        yf[at] =
          g.op === 'max' ? xf[windowArgmax(g, xf, plane, i, j)]! : windowSum(g, xf, plane, i, j) / area;
      }
    }
  }
  storeFloat(y, yf);
};
