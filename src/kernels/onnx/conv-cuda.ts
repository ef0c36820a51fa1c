/**
 * onnx_conv and onnx_conv_transpose on CUDA. A dense conv (group 1 and at least 16 products per
 * output) runs as cuBLAS GEMMs per image, on x itself for a 1x1 stride-1 unpadded conv (MobileNet's
 * pointwise layers) and on an im2col scratch otherwise, onto y preset to the bias; grouped and
 * depthwise convs and every ConvTranspose run direct kernels (one thread per output element).
 */
import type {
  CudaArg,
  CudaKernelContext,
  CudaNative,
  CudaParam,
  CudaProgram,
} from '../../devices/cuda/kernel-api.js';
import type { Scalars } from '../../devices/device.js';
import { bytesPerElement } from '../../core/dtype.js';
import { BLOCK_DIM, GRID_STRIDE, MATH_OVERLOADS, elementwiseGrid } from '../common/cuda.js';
import { i64Params } from './common.js';
import { type ConvGeometry, convGeometry, convTransposeGeometry } from './conv.js';
import { onnxUnaryCuda } from './elementwise.js';
import { UNARY_CUDA_CASES, UNARY_CUDA_HELPERS, UNARY_OPS, activationParams } from './elementwise-ops.js';

/** The fused activation: its op as the define OP, its scalars as the last four parameters. */
function activationDefines(_args: unknown, scalars: Scalars) {
  return { OP: UNARY_OPS.indexOf(activationParams(scalars).op) };
}
function activationParamList(scalars: Scalars): CudaParam[] {
  const p = activationParams(scalars);
  return [p.alpha, p.beta, p.min, p.max].map((value): CudaParam => ({ kind: 'f64', value }));
}
const ACTIVATION_PARAMS = 'double ALPHA, double BETA, double LO, double HI';
const STORE_ACTIVATED = `{
    X_c v = s;
${UNARY_CUDA_CASES}
    stX(y, i, r);
  }`;

/** The geometry as i64 parameters, in the order GEOMETRY_PARAMS declares them. */
function geometryParams(g: ConvGeometry): CudaParam[] {
  return i64Params([
    g.n,
    g.c,
    g.h,
    g.w,
    g.o,
    g.cg,
    g.og,
    g.ho,
    g.wo,
    g.kh,
    g.kw,
    g.sh,
    g.sw,
    g.dh,
    g.dw,
    g.pads[0],
    g.pads[1],
  ]);
}
const GEOMETRY_PARAMS = `long long N, long long C, long long H, long long W, long long O, long long CG, long long OG,
    long long HO, long long WO, long long KH, long long KW, long long SH, long long SW, long long DH, long long DW,
    long long PT, long long PL`;

function descsOf(args: readonly { desc: CudaArg['desc'] }[]) {
  return { x: args[0]!.desc, w: args[1]!.desc, b: args[2]!.desc, y: args[3]!.desc };
}

const convDirect: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_conv',
  source: `${MATH_OVERLOADS}${UNARY_CUDA_HELPERS}
extern "C" __global__ void tdm_onnx_conv(const X_t* __restrict__ x, const X_t* __restrict__ w,
    const X_t* __restrict__ b, X_t* __restrict__ y, long long n, ${GEOMETRY_PARAMS}, ${ACTIVATION_PARAMS}) {
  ${GRID_STRIDE} {
    long long ow = i % WO, oh = (i / WO) % HO, o = (i / (WO * HO)) % O, img = i / (WO * HO * O);
    long long c0 = (o / OG) * CG;
    X_c s = ldX(b, o);
    for (long long ci = 0; ci < CG; ++ci) {
      const X_t* plane = x + ((img * C + c0 + ci) * H) * W;
      const X_t* wk = w + (o * CG + ci) * KH * KW;
      for (long long r = 0; r < KH; ++r) {
        long long ih = oh * SH - PT + r * DH;
        if (ih < 0 || ih >= H) continue;
        for (long long q = 0; q < KW; ++q) {
          long long iw = ow * SW - PL + q * DW;
          if (iw < 0 || iw >= W) continue;
          s += ldX(plane, ih * W + iw) * ldX(wk, r * KW + q);
        }
      }
    }
    ${STORE_ACTIVATED}
  }
}`,
  defines: activationDefines,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  grid: (args, scalars) => {
    const g = convGeometry('onnx_conv', descsOf(args), scalars);
    return elementwiseGrid(g.n * g.o * g.ho * g.wo);
  },
  block: () => BLOCK_DIM,
  params: (args, scalars) => {
    const g = convGeometry('onnx_conv', descsOf(args), scalars);
    return [0, 1, 2, 3]
      .map((arg): CudaParam => ({ kind: 'ptr', arg }))
      .concat([
        { kind: 'i64', value: g.n * g.o * g.ho * g.wo },
        ...geometryParams(g),
        ...activationParamList(scalars),
      ]);
  },
};

/** col[(ci·kh + r)·kw + q][oh·wo + ow] of image `img` (group 1), zeros in the padding. */
const im2colProgram = (img: number, col: number): CudaProgram => ({
  kind: 'program',
  entry: 'tdm_onnx_im2col',
  source: `
extern "C" __global__ void tdm_onnx_im2col(const X_t* __restrict__ x, X_t* __restrict__ col, long long n,
    long long img, ${GEOMETRY_PARAMS}) {
  ${GRID_STRIDE} {
    long long p = i % (HO * WO), row = i / (HO * WO);
    long long ow = p % WO, oh = p / WO;
    long long q = row % KW, r = (row / KW) % KH, ci = row / (KW * KH);
    long long ih = oh * SH - PT + r * DH, iw = ow * SW - PL + q * DW;
    X_t v = (X_t)0;
    if (ih >= 0 && ih < H && iw >= 0 && iw < W) v = x[((img * C + ci) * H + ih) * W + iw];
    col[i] = v;
  }
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  grid: (args, scalars) => {
    const g = convGeometry('onnx_conv', descsOf(args), scalars);
    return elementwiseGrid(g.cg * g.kh * g.kw * g.ho * g.wo);
  },
  block: () => BLOCK_DIM,
  params: (args, scalars) => {
    const g = convGeometry('onnx_conv', descsOf(args), scalars);
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'addr', value: col },
      { kind: 'i64', value: g.cg * g.kh * g.kw * g.ho * g.wo },
      { kind: 'i64', value: img },
      ...geometryParams(g),
    ];
  },
});

/** y[n,o,p] = b[o] for every image: the GEMMs then add onto it (beta = 1). */
const biasFill: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_bias_fill',
  source: `
extern "C" __global__ void tdm_onnx_bias_fill(const X_t* __restrict__ b, X_t* __restrict__ y, long long n,
    long long O, long long P) {
  ${GRID_STRIDE} y[i] = b[(i / P) % O];
}`,
  dtypes: (args) => ({ X: args[3]!.desc.dtype }),
  grid: (args) => elementwiseGrid(args[3]!.desc.shape.reduce((a, d) => a * d, 1)),
  block: () => BLOCK_DIM,
  params: (args) => {
    const [, o, ho, wo] = args[3]!.desc.shape as [number, number, number, number];
    return [
      { kind: 'ptr', arg: 2 },
      { kind: 'ptr', arg: 3 },
      { kind: 'i64', value: args[3]!.desc.shape.reduce((a, d) => a * d, 1) },
      { kind: 'i64', value: o },
      { kind: 'i64', value: ho * wo },
    ];
  },
};

/** Products per output under which the direct kernel beats a GEMM's launch and scratch traffic. */
const GEMM_MIN_K = 16;

function runConv(ctx: CudaKernelContext, args: readonly CudaArg[], scalars: Scalars): void {
  const g = convGeometry('onnx_conv', descsOf(args), scalars);
  const k = g.cg * g.kh * g.kw;
  if (g.group !== 1 || k < GEMM_MIN_K) {
    ctx.launch(convDirect, args, scalars);
    return;
  }
  const [x, w, , y] = args as [CudaArg, CudaArg, CudaArg, CudaArg];
  const dtype = y.desc.dtype;
  const size = bytesPerElement(dtype);
  const p = g.ho * g.wo;
  const pointwise =
    g.kh === 1 && g.kw === 1 && g.sh === 1 && g.sw === 1 && g.pads.every((v) => v === 0) && p === g.h * g.w;
  ctx.launch(biasFill, args, scalars);
  const col = pointwise ? 0 : ctx.scratch(k * p * size);
  for (let img = 0; img < g.n; img++) {
    if (!pointwise) ctx.launch(im2colProgram(img, col), args, scalars);
    const b = pointwise ? x.ptr + img * g.c * p * size : col;
    ctx.gemm({
      dtype,
      precision: 'default',
      transA: false,
      transB: false,
      m: g.o,
      n: p,
      k,
      alpha: 1,
      beta: 1,
      a: w.ptr,
      b,
      c: y.ptr + img * g.o * p * size,
    });
  }
  const act = activationParams(scalars);
  if (act.op !== 'identity') {
    const unary = { op: act.op, alpha: act.alpha, beta: act.beta, min: act.min, max: act.max };
    ctx.launch(onnxUnaryCuda, [y, y], unary);
  }
}

export const onnxConvCuda: CudaNative = { kind: 'native', run: runConv };

export const onnxConvTransposeCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_conv_transpose',
  source: `${MATH_OVERLOADS}${UNARY_CUDA_HELPERS}
extern "C" __global__ void tdm_onnx_conv_transpose(const X_t* __restrict__ x, const X_t* __restrict__ w,
    const X_t* __restrict__ b, X_t* __restrict__ y, long long n, ${GEOMETRY_PARAMS}, ${ACTIVATION_PARAMS}) {
  ${GRID_STRIDE} {
    long long ow = i % WO, oh = (i / WO) % HO, o = (i / (WO * HO)) % O, img = i / (WO * HO * O);
    long long gi = o / OG, wo = o - gi * OG;
    X_c s = ldX(b, o);
    for (long long r = 0; r < KH; ++r) {
      long long th = oh + PT - r * DH;
      if (th < 0 || th % SH != 0 || th / SH >= H) continue;
      for (long long q = 0; q < KW; ++q) {
        long long tw = ow + PL - q * DW;
        if (tw < 0 || tw % SW != 0 || tw / SW >= W) continue;
        for (long long ci = 0; ci < CG; ++ci) {
          long long c = gi * CG + ci;
          s += ldX(x, ((img * C + c) * H + th / SH) * W + tw / SW) * ldX(w, ((c * OG + wo) * KH + r) * KW + q);
        }
      }
    }
    ${STORE_ACTIVATED}
  }
}`,
  defines: activationDefines,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  grid: (args, scalars) => {
    const g = convTransposeGeometry('onnx_conv_transpose', descsOf(args), scalars);
    return elementwiseGrid(g.n * g.o * g.ho * g.wo);
  },
  block: () => BLOCK_DIM,
  params: (args, scalars) => {
    const g = convTransposeGeometry('onnx_conv_transpose', descsOf(args), scalars);
    return [0, 1, 2, 3]
      .map((arg): CudaParam => ({ kind: 'ptr', arg }))
      .concat([
        { kind: 'i64', value: g.n * g.o * g.ho * g.wo },
        ...geometryParams(g),
        ...activationParamList(scalars),
      ]);
  },
};
