/**
 * conv2d_backward on CUDA, per chunk of images (cuda-programs.ts has the layouts):
 *   dyt = dy regrouped as [O, nb·P];  col = im2col(x);  dwAcc (+)= dyt · colᵀ  (cuBLAS, f32/f64)
 *   col = wᵀ · dyt (cuBLAS), then col2im gathers it into dx (each dx element written once);
 * db is one block-reduction per output channel; dw is stored (or added) from the accumulator at the end.
 */
import type { CudaNative } from '../../devices/cuda/kernel-api.js';
import { boolScalar } from '../common/scalars.js';
import {
  COL2IM,
  type ConvLaunch,
  DB_FINAL,
  DB_PART,
  DW_STORE,
  GATHER_DY,
  GATHER_DY_ROWS,
  COLUMN_BYTES,
  IM2COL,
  IM2COL_ROWS,
  TO_COMPUTE,
  imagesPerChunk,
  dbParts,
  gemmPrecision,
  launchScalars,
  rowsFit,
} from '../conv2d/cuda-programs.js';
import { convGeometry } from '../conv2d/geometry.js';

const OP = 'conv2d_backward';
// Argument indices: dy, x, w, dx, dw, db.
const [DY, X, W, DX, DWT, DBT] = [0, 1, 2, 3, 4, 5];

/** `columnBytes` bounds the column buffers (tests pass a tiny one to run several chunks). */
export function conv2dBackwardCudaWith(columnBytes = COLUMN_BYTES): CudaNative {
  return {
    kind: 'native',
    run(ctx, args, scalars) {
      const g = convGeometry(args[X]!.desc.shape, args[W]!.desc.shape, scalars, OP);
      const accumulate = boolScalar(OP, scalars, 'accumulate', false) ? 1 : 0;
      const dtype = args[X]!.desc.dtype;
      const computeBytes = dtype === 'f64' ? 8 : 4;
      const gemmDtype = dtype === 'f64' ? 'f64' : 'f32';
      const k = g.c * g.kh * g.kw;
      const p = g.ho * g.wo;
      const base: ConvLaunch = {
        g,
        n0: 0,
        nb: 0,
        total: 0,
        a: 0,
        b: 0,
        x: 0,
        y: 0,
        bias: 0,
        accumulate,
        have: 0,
      };
      const parts = dbParts(g.n);
      const dbPart = ctx.scratch(g.o * parts * computeBytes);
      ctx.launch(DB_PART, args, launchScalars({ ...base, x: DY, a: dbPart, nb: parts }));
      ctx.launch(DB_FINAL, args, launchScalars({ ...base, a: dbPart, y: DBT, nb: parts, total: g.o }));
      let wc = args[W]!.ptr;
      if (dtype === 'f16' || dtype === 'bf16') {
        wc = ctx.scratch(g.o * k * 4);
        ctx.launch(TO_COMPUTE, args, launchScalars({ ...base, x: W, a: wc, total: g.o * k }));
      }
      const chunk = imagesPerChunk(g, computeBytes, columnBytes);
      const dwAcc = ctx.scratch(g.o * k * computeBytes);
      const col = g.n > 0 ? ctx.scratch(k * chunk * p * computeBytes) : 0;
      const dyt = g.n > 0 ? ctx.scratch(g.o * chunk * p * computeBytes) : 0;
      for (let n0 = 0; n0 < g.n; n0 += chunk) {
        const nb = Math.min(chunk, g.n - n0);
        const gemm = { dtype: gemmDtype, precision: gemmPrecision(dtype), alpha: 1 } as const;
        if (rowsFit(Math.max(k, g.o), nb * p)) {
          ctx.launch(GATHER_DY_ROWS, args, launchScalars({ ...base, x: DY, a: dyt, n0, nb, total: g.o }));
          ctx.launch(IM2COL_ROWS, args, launchScalars({ ...base, x: X, a: col, n0, nb, total: k }));
        } else {
          ctx.launch(GATHER_DY, args, launchScalars({ ...base, x: DY, a: dyt, n0, nb, total: nb * g.o * p }));
          ctx.launch(IM2COL, args, launchScalars({ ...base, x: X, a: col, n0, nb, total: k * nb * p }));
        }
        // dwAcc[O, K] (+)= dyt[O, nb·P] · col[K, nb·P]ᵀ
        ctx.gemm({
          ...gemm,
          transA: false,
          transB: true,
          m: g.o,
          n: k,
          k: nb * p,
          beta: n0 === 0 ? 0 : 1,
          a: dyt,
          b: col,
          c: dwAcc,
        });
        // col[K, nb·P] = w[O, K]ᵀ · dyt[O, nb·P] (the columns are no longer needed: reuse them)
        ctx.gemm({
          ...gemm,
          transA: true,
          transB: false,
          m: k,
          n: nb * p,
          k: g.o,
          beta: 0,
          a: wc,
          b: dyt,
          c: col,
        });
        ctx.launch(
          COL2IM,
          args,
          launchScalars({ ...base, a: col, y: DX, n0, nb, total: nb * g.c * g.h * g.w }),
        );
      }
      ctx.launch(
        DW_STORE,
        args,
        launchScalars({ ...base, a: dwAcc, y: DWT, have: g.n > 0 ? 1 : 0, total: g.o * k }),
      );
    },
  };
}

export const conv2dBackwardCuda = conv2dBackwardCudaWith();
