/**
 * onnx_conv and onnx_conv_transpose on the CPU, in f32 (f64 for f64; f16/bf16 decoded, rounded once):
 * - conv with one input channel per group (depthwise): shift-and-add per kernel tap
 *   over y preset to the bias, no branch in the inner loop;
 * - other convs: per image and group, im2col and one GEMM of the worker's engine (OpenBLAS);
 * - conv transpose: per image and group, one GEMM col = w_gᵀ·x_g ([og·kh·kw, H·W]), then col2im adds
 *   each column into y preset to the bias.
 * Then the fused activation, if any.
 */
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import type { Scalars } from '../../devices/device.js';
import { type FloatArray, floatCopyOf, isHalf, storeFloat } from '../common/cpu-float.js';
import { floatGemm } from '../gemm/cpu.js';
import { type ConvGeometry, convEpilogue, convGeometry, convTransposeGeometry } from './conv.js';
import { mapArray } from './map-program.js';

/** The fused activation and epilogue program (convEpilogue), element by element. */
function applyActivation(y: FloatArray, op: string, scalars: Scalars): void {
  const p = convEpilogue(op, scalars);
  if (p.instrs.length === 0) return;
  if (p.instrs.length === 1 && p.instrs[0]!.op === 'relu') {
    for (let i = 0; i < y.length; i++) if (y[i]! < 0) y[i] = 0;
    return;
  }
  mapArray(p, y, y, y.length);
}

/** The range of output indices o with 0 ≤ o·stride + offset < size: [first, end). */
function validRange(offset: number, stride: number, size: number, count: number): [number, number] {
  const first = offset >= 0 ? 0 : Math.ceil(-offset / stride);
  const end = Math.min(count, Math.max(0, Math.ceil((size - offset) / stride)));
  return [Math.min(first, end), end];
}

/** y_plane += w·x_plane shifted by one kernel tap, for every tap, channel by channel (cg = 1 typical). */
function convDirect(g: ConvGeometry, x: FloatArray, w: FloatArray, y: FloatArray): void {
  for (let n = 0; n < g.n; n++)
    for (let o = 0; o < g.o; o++) {
      const yp = (n * g.o + o) * g.ho * g.wo;
      const c0 = Math.floor(o / g.og) * g.cg;
      for (let ci = 0; ci < g.cg; ci++) {
        const xp = (n * g.c + c0 + ci) * g.h * g.w;
        for (let i = 0; i < g.kh; i++) {
          const [oh0, oh1] = validRange(i * g.dh - g.pads[0], g.sh, g.h, g.ho);
          for (let j = 0; j < g.kw; j++) {
            const wv = w[((o * g.cg + ci) * g.kh + i) * g.kw + j]!;
            const offW = j * g.dw - g.pads[1];
            const [ow0, ow1] = validRange(offW, g.sw, g.w, g.wo);
            for (let oh = oh0; oh < oh1; oh++) {
              const xr = xp + (oh * g.sh + i * g.dh - g.pads[0]) * g.w + offW;
              const yr = yp + oh * g.wo;
              for (let ow = ow0; ow < ow1; ow++) y[yr + ow] = y[yr + ow]! + wv * x[xr + ow * g.sw]!;
            }
          }
        }
      }
    }
}

/** Columns of image n, group gi: col[(ci·kh + i)·kw + j][oh·wo + ow], zeros where the window is in the padding. */
function im2col(g: ConvGeometry, x: FloatArray, n: number, gi: number, col: FloatArray): void {
  const p = g.ho * g.wo;
  col.fill(0);
  let row = 0;
  for (let ci = 0; ci < g.cg; ci++) {
    const plane = (n * g.c + gi * g.cg + ci) * g.h * g.w;
    for (let i = 0; i < g.kh; i++) {
      const [oh0, oh1] = validRange(i * g.dh - g.pads[0], g.sh, g.h, g.ho);
      for (let j = 0; j < g.kw; j++, row++) {
        const offW = j * g.dw - g.pads[1];
        const [ow0, ow1] = validRange(offW, g.sw, g.w, g.wo);
        for (let oh = oh0; oh < oh1; oh++) {
          const xr = plane + (oh * g.sh + i * g.dh - g.pads[0]) * g.w + offW;
          const cr = row * p + oh * g.wo;
          for (let ow = ow0; ow < ow1; ow++) col[cr + ow] = x[xr + ow * g.sw]!;
        }
      }
    }
  }
}

function presetBias(y: FloatArray, b: FloatArray, n: number, o: number, plane: number): void {
  for (let img = 0; img < n; img++)
    for (let c = 0; c < o; c++) y.fill(b[c]!, (img * o + c) * plane, (img * o + c + 1) * plane);
}

function floatArgs(args: readonly CpuArg[]) {
  const [x, w, b, y] = args as [CpuArg, CpuArg, CpuArg, CpuArg];
  const yf = isHalf(y.desc.dtype) ? new Float32Array(y.data.length) : (y.data as FloatArray);
  return { x, w, b, y, xf: floatCopyOf(x), wf: floatCopyOf(w), bf: floatCopyOf(b), yf };
}

export const onnxConvCpu: CpuKernel = (args, scalars, ctx) => {
  const { x, w, b, y, xf, wf, bf, yf } = floatArgs(args);
  const g = convGeometry('onnx_conv', { x: x.desc, w: w.desc, b: b.desc, y: y.desc }, scalars);
  const p = g.ho * g.wo;
  const k = g.cg * g.kh * g.kw;
  presetBias(yf, bf, g.n, g.o, p);
  // One channel per group (depthwise): a GEMM per channel would have one row; the taps loop wins.
  if (g.cg === 1) convDirect(g, xf, wf, yf);
  else {
    const col = yf instanceof Float64Array ? new Float64Array(k * p) : new Float32Array(k * p);
    for (let n = 0; n < g.n; n++)
      for (let gi = 0; gi < g.group; gi++) {
        im2col(g, xf, n, gi, col);
        const o0 = gi * g.og;
        const yg = yf.subarray((n * g.o + o0) * p, (n * g.o + o0 + g.og) * p);
        const wg = wf.subarray(o0 * k, (o0 + g.og) * k);
        floatGemm(ctx, { transA: false, transB: false, m: g.og, n: p, k, alpha: 1, beta: 1 }, wg, col, yg);
      }
  }
  applyActivation(yf, 'onnx_conv', scalars);
  storeFloat(y, yf);
};

/** y[n, o, ih·sh − top + i·dh, iw·sw − left + j·dw] += col[(o·kh + i)·kw + j][ih·W + iw] (group-local o). */
function col2im(g: ConvGeometry, col: FloatArray, y: FloatArray, n: number, gi: number): void {
  const hw = g.h * g.w;
  for (let o = 0; o < g.og; o++) {
    const yp = (n * g.o + gi * g.og + o) * g.ho * g.wo;
    for (let i = 0; i < g.kh; i++)
      for (let j = 0; j < g.kw; j++) {
        const row = ((o * g.kh + i) * g.kw + j) * hw;
        const offH = i * g.dh - g.pads[0];
        const offW = j * g.dw - g.pads[1];
        const [ih0, ih1] = validRange(offH, g.sh, g.ho, g.h);
        const [iw0, iw1] = validRange(offW, g.sw, g.wo, g.w);
        for (let ih = ih0; ih < ih1; ih++) {
          const yr = yp + (ih * g.sh + offH) * g.wo + offW;
          const cr = row + ih * g.w;
          for (let iw = iw0; iw < iw1; iw++) y[yr + iw * g.sw] = y[yr + iw * g.sw]! + col[cr + iw]!;
        }
      }
  }
}

export const onnxConvTransposeCpu: CpuKernel = (args, scalars, ctx) => {
  const { x, w, b, y, xf, wf, bf, yf } = floatArgs(args);
  const g = convTransposeGeometry(
    'onnx_conv_transpose',
    { x: x.desc, w: w.desc, b: b.desc, y: y.desc },
    scalars,
  );
  const hw = g.h * g.w;
  const rows = g.og * g.kh * g.kw;
  presetBias(yf, bf, g.n, g.o, g.ho * g.wo);
  const col = yf instanceof Float64Array ? new Float64Array(rows * hw) : new Float32Array(rows * hw);
  for (let n = 0; n < g.n; n++)
    for (let gi = 0; gi < g.group; gi++) {
      // w_g is [cg, og·kh·kw] row-major: its transpose times x_g [cg, H·W].
      const wg = wf.subarray(gi * g.cg * rows, (gi + 1) * g.cg * rows);
      const xg = xf.subarray((n * g.c + gi * g.cg) * hw, (n * g.c + (gi + 1) * g.cg) * hw);
      floatGemm(
        ctx,
        { transA: true, transB: false, m: rows, n: hw, k: g.cg, alpha: 1, beta: 0 },
        wg,
        xg,
        col,
      );
      col2im(g, col, yf, n, gi);
    }
  applyActivation(yf, 'onnx_conv_transpose', scalars);
  storeFloat(y, yf);
};
