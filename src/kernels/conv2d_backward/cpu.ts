/**
 * conv2d_backward on the CPU, per image with the forward's column layout:
 *   dw (+)= dy_n[O, P] · col_nᵀ          (one GEMM per image, accumulating from the second on)
 *   dcol   = wᵀ[C·kh·kw, O] · dy_n[O, P]  (then col2im adds it onto dx_n)
 *   db (+)= Σ_n Σ_p dy_n
 * f16/bf16 are decoded to f32, computed in f32 and rounded once on store.
 */
import type { CpuArg, CpuKernel, CpuKernelContext } from '../../devices/cpu/kernel-api.js';
import { type FloatArray, floatCopyOf, isHalf, storeFloat } from '../common/cpu-float.js';
import { boolScalar } from '../common/scalars.js';
import { floatGemm } from '../gemm/cpu.js';
import { type ConvGeometry, convGeometry } from '../conv2d/geometry.js';
import { col2imAdd, im2col } from '../conv2d/im2col.js';

const OP = 'conv2d_backward';

interface Buffers<T extends FloatArray> {
  readonly dy: T;
  readonly x: T;
  readonly w: T;
  readonly dx: T;
  readonly dw: T;
  readonly db: T;
  readonly col: T;
}

function backward<T extends FloatArray>(
  g: ConvGeometry,
  ctx: CpuKernelContext,
  t: Buffers<T>,
  accumulate: boolean,
): void {
  const p = g.ho * g.wo;
  const k = g.c * g.kh * g.kw;
  if (!accumulate) {
    t.dw.fill(0);
    t.db.fill(0);
  }
  t.dx.fill(0);
  for (let o = 0; o < g.o; o++) {
    let sum = 0;
    for (let n = 0; n < g.n; n++) {
      const from = (n * g.o + o) * p;
      for (let q = from; q < from + p; q++) sum += t.dy[q]!;
    }
    t.db[o]! += sum;
  }
  for (let n = 0; n < g.n; n++) {
    const dyn = t.dy.subarray(n * g.o * p, (n + 1) * g.o * p) as T;
    im2col(g, t.x, n, t.col);
    floatGemm(ctx, { transA: false, transB: true, m: g.o, n: k, k: p, alpha: 1, beta: 1 }, dyn, t.col, t.dw);
    floatGemm(ctx, { transA: true, transB: false, m: k, n: p, k: g.o, alpha: 1, beta: 0 }, t.w, dyn, t.col);
    col2imAdd(g, t.col, t.dx, n);
  }
}

export const conv2dBackwardCpu: CpuKernel = (args, scalars, ctx) => {
  const [dy, x, w, dx, dw, db] = args as [CpuArg, CpuArg, CpuArg, CpuArg, CpuArg, CpuArg];
  const g = convGeometry(x.desc.shape, w.desc.shape, scalars, OP);
  const accumulate = boolScalar(OP, scalars, 'accumulate', false);
  const colLength = g.c * g.kh * g.kw * g.ho * g.wo;
  if (dy.desc.dtype === 'f64') {
    const v = (a: CpuArg): Float64Array => a.data as Float64Array;
    const t = {
      dy: v(dy),
      x: v(x),
      w: v(w),
      dx: v(dx),
      dw: v(dw),
      db: v(db),
      col: new Float64Array(colLength),
    };
    backward(g, ctx, t, accumulate);
    return;
  }
  const half = isHalf(dy.desc.dtype);
  // Outputs: in place for f32; f32 scratch for 16-bit (decoded when accumulating, since dw/db are read).
  const out = (a: CpuArg, read: boolean): Float32Array =>
    !half
      ? (a.data as Float32Array)
      : read
        ? (floatCopyOf(a) as Float32Array)
        : new Float32Array(a.data.length);
  const t = {
    dy: floatCopyOf(dy) as Float32Array,
    x: floatCopyOf(x) as Float32Array,
    w: floatCopyOf(w) as Float32Array,
    dx: out(dx, false),
    dw: out(dw, accumulate),
    db: out(db, accumulate),
    col: new Float32Array(colLength),
  };
  backward(g, ctx, t, accumulate);
  storeFloat(dx, t.dx);
  storeFloat(dw, t.dw);
  storeFloat(db, t.db);
};
