/** pool2d_backward on the CPU: dx cleared, then each window's dy added back; f16/bf16 via f32. */
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import { type FloatArray, floatCopyOf, isHalf, storeFloat } from '../common/cpu-float.js';
import { poolGeometry } from '../pool2d/geometry.js';
import { forEachArgmax, forEachWindow } from '../pool2d/window.js';

export const pool2dBackwardCpu: CpuKernel = (args, scalars) => {
  const [x, dy, dx] = args as [CpuArg, CpuArg, CpuArg];
  const g = poolGeometry(x.desc.shape, scalars, 'pool2d_backward');
  const dyf = floatCopyOf(dy);
  const dxf: FloatArray = isHalf(dx.desc.dtype) ? new Float32Array(dx.data.length) : (dx.data as FloatArray);
  dxf.fill(0);
  if (g.op === 'max') {
    forEachArgmax(g, floatCopyOf(x), (out, at) => (dxf[at]! += dyf[out]!));
  } else {
    const share = 1 / (g.kernel * g.kernel);
    const W = g.w;
    forEachWindow(g, (out, plane, h0, h1, w0, w1) => {
      const d = dyf[out]! * share;
      for (let h = h0; h < h1; h++) for (let w = w0; w < w1; w++) dxf[plane + h * W + w]! += d;
    });
  }
  storeFloat(dx, dxf);
};
