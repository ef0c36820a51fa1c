/**
 * conv2d on CUDA: per chunk of images, im2col into a compute-type column buffer (scratch), one cuBLAS
 * GEMM yt = w · col, and a kernel that adds the bias and writes y in NCHW. f16/bf16 weights are
 * widened to f32 first, so the GEMM runs in f32 and y is rounded once.
 */
import type { CudaNative } from '../../devices/cuda/kernel-api.js';
import {
  COLUMN_BYTES,
  CONV_OUT,
  CONV_OUT_ROWS,
  type ConvLaunch,
  IM2COL,
  IM2COL_ROWS,
  TO_COMPUTE,
  gemmPrecision,
  imagesPerChunk,
  launchScalars,
  rowsFit,
} from './cuda-programs.js';
import { convGeometry } from './geometry.js';

/** `columnBytes` bounds the column buffers (tests pass a tiny one to run several chunks). */
export function conv2dCudaWith(columnBytes = COLUMN_BYTES): CudaNative {
  return {
    kind: 'native',
    run(ctx, args, scalars) {
      const [x, w] = args;
      const g = convGeometry(x!.desc.shape, w!.desc.shape, scalars);
      const dtype = x!.desc.dtype;
      const computeBytes = dtype === 'f64' ? 8 : 4;
      const gemmDtype = dtype === 'f64' ? 'f64' : 'f32';
      const k = g.c * g.kh * g.kw;
      const p = g.ho * g.wo;
      if (g.n === 0) return;
      const base: ConvLaunch = {
        g,
        n0: 0,
        nb: 0,
        total: 0,
        a: 0,
        b: 0,
        x: 0,
        y: 3,
        bias: 2,
        accumulate: 0,
        have: 0,
      };
      let wc = w!.ptr;
      if (dtype === 'f16' || dtype === 'bf16') {
        wc = ctx.scratch(g.o * k * 4);
        ctx.launch(TO_COMPUTE, args, launchScalars({ ...base, x: 1, a: wc, total: g.o * k }));
      }
      const chunk = imagesPerChunk(g, computeBytes, columnBytes);
      const col = ctx.scratch(k * chunk * p * computeBytes);
      const yt = ctx.scratch(g.o * chunk * p * computeBytes);
      for (let n0 = 0; n0 < g.n; n0 += chunk) {
        const nb = Math.min(chunk, g.n - n0);
        const rows = rowsFit(Math.max(k, g.o), nb * p);
        if (rows) ctx.launch(IM2COL_ROWS, args, launchScalars({ ...base, n0, nb, a: col, total: k }));
        else ctx.launch(IM2COL, args, launchScalars({ ...base, n0, nb, a: col, total: k * nb * p }));
        ctx.gemm({
          dtype: gemmDtype,
          precision: gemmPrecision(dtype),
          transA: false,
          transB: false,
          m: g.o,
          n: nb * p,
          k,
          alpha: 1,
          beta: 0,
          a: wc,
          b: col,
          c: yt,
        });
        if (rows) ctx.launch(CONV_OUT_ROWS, args, launchScalars({ ...base, n0, nb, a: yt, total: g.o }));
        else ctx.launch(CONV_OUT, args, launchScalars({ ...base, n0, nb, a: yt, total: nb * g.o * p }));
      }
    },
  };
}

export const conv2dCuda = conv2dCudaWith();
