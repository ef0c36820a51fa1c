/**
 * conv2d on the CPU: per image, im2col into a [C·kh·kw, Ho·Wo] column buffer, then one GEMM of the
 * worker's engine (OpenBLAS, WebAssembly or TS) onto y_n preset to the bias. f16/bf16 are decoded to
 * f32, computed in f32 and rounded once on store.
 */
import type { CpuArg, CpuKernel, CpuKernelContext } from '../../devices/cpu/kernel-api.js';
import { type FloatArray, floatCopyOf, isHalf, storeFloat } from '../common/cpu-float.js';
import { floatGemm } from '../gemm/cpu.js';
import { type ConvGeometry, convGeometry } from './geometry.js';
import { im2col } from './im2col.js';

function forward<T extends FloatArray>(
  g: ConvGeometry,
  ctx: CpuKernelContext,
  x: T,
  w: T,
  b: T,
  y: T,
  col: T,
): void {
  const p = g.ho * g.wo;
  const k = g.c * g.kh * g.kw;
  for (let n = 0; n < g.n; n++) {
    im2col(g, x, n, col);
    const yn = y.subarray(n * g.o * p, (n + 1) * g.o * p) as T;
    for (let o = 0; o < g.o; o++) yn.fill(b[o]!, o * p, (o + 1) * p);
    floatGemm(ctx, { transA: false, transB: false, m: g.o, n: p, k, alpha: 1, beta: 1 }, w, col, yn);
  }
}

export const conv2dCpu: CpuKernel = (args, scalars, ctx) => {
  const [x, w, b, y] = args as [CpuArg, CpuArg, CpuArg, CpuArg];
  const g = convGeometry(x.desc.shape, w.desc.shape, scalars);
  const colLength = g.c * g.kh * g.kw * g.ho * g.wo;
  if (y.desc.dtype === 'f64') {
    const [xf, wf, bf, yf] = [x, w, b, y].map((a) => a.data as Float64Array) as [
      Float64Array,
      Float64Array,
      Float64Array,
      Float64Array,
    ];
    forward(g, ctx, xf, wf, bf, yf, new Float64Array(colLength));
    return;
  }
  const yf = isHalf(y.desc.dtype) ? new Float32Array(y.data.length) : (y.data as Float32Array);
  const [xf, wf, bf] = [x, w, b].map((a) => floatCopyOf(a) as Float32Array) as [
    Float32Array,
    Float32Array,
    Float32Array,
  ];
  forward(g, ctx, xf, wf, bf, yf, new Float32Array(colLength));
  storeFloat(y, yf);
};
