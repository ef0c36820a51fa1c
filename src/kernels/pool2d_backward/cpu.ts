/** pool2d_backward on the CPU: dx cleared, then each window's dy added back; f16/bf16 via f32. */
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import { type FloatArray, floatCopyOf, isHalf, storeFloat } from '../common/cpu-float.js';
import { poolGeometry } from '../pool2d/geometry.js';
import { windowArgmax } from '../pool2d/window.js';

export const pool2dBackwardCpu: CpuKernel = (args, scalars) => {
  const [x, dy, dx] = args as [CpuArg, CpuArg, CpuArg];
  const g = poolGeometry(x.desc.shape, scalars, 'pool2d_backward');
  const xf = floatCopyOf(x);
  const dyf = floatCopyOf(dy);
  const dxf: FloatArray = isHalf(dx.desc.dtype) ? new Float32Array(dx.data.length) : (dx.data as FloatArray);
  dxf.fill(0);
  const share = 1 / (g.kernel * g.kernel);
  for (let nc = 0; nc < g.n * g.c; nc++) {
    const plane = nc * g.h * g.w;
    for (let i = 0; i < g.ho; i++) {
      for (let j = 0; j < g.wo; j++) {
        const d = dyf[(nc * g.ho + i) * g.wo + j]!;
        if (g.op === 'max') {
          dxf[windowArgmax(g, xf, plane, i, j)]! += d;
          continue;
        }
        const h0 = i * g.stride - g.padding;
        const w0 = j * g.stride - g.padding;
        for (let h = Math.max(h0, 0); h < Math.min(h0 + g.kernel, g.h); h++) {
          for (let w = Math.max(w0, 0); w < Math.min(w0 + g.kernel, g.w); w++)
            dxf[plane + h * g.w + w]! += d * share;
        }
      }
    }
  }
  storeFloat(dx, dxf);
};
