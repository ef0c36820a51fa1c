/**
 * onnx_conv and onnx_conv_transpose on CUDA. A dense conv with at most 32 output channels and a
 * window larger than 1x1 runs the tiled kernel (conv-cuda-tiled.ts). Other dense convs (group 1 and
 * at least 16 products per output) run as cuBLAS GEMMs, on x itself for a 1x1 stride-1 unpadded conv (MobileNet's
 * pointwise layers) and on an im2col scratch otherwise; the bias, the activation and the epilogue
 * program then go in one pass over y (f32/f64: the GEMMs write y, the pass adds the bias; f16/bf16:
 * y preset to the bias, the GEMMs add onto it, so the sum is rounded once). Grouped and depthwise
 * convs and every ConvTranspose run direct kernels (one thread per output element) that apply the
 * activation and epilogue before their store.
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
import { CUDA_INDEX, idx32 } from './common.js';
import {
  EPILOGUE_PARAMS,
  GEOMETRY_PARAMS,
  STORE_ACTIVATED,
  descsOf,
  directDefines,
  epilogueDefines,
  epilogueParamList,
  geometryParams,
} from './conv-cuda-common.js';
import { numel } from '../../core/shape.js';
import { convEpilogue, convGeometry, convPrecision, convTransposeGeometry } from './conv.js';
import { tiledConv, tiledConvFits } from './conv-cuda-tiled.js';
import { UNARY_CUDA_HELPERS } from './elementwise-ops.js';

const convDirect: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_conv',
  source: `${MATH_OVERLOADS}${UNARY_CUDA_HELPERS}${CUDA_INDEX}
extern "C" __global__ void tdm_onnx_conv(const X_t* __restrict__ x, const X_t* __restrict__ w,
    const X_t* __restrict__ b, X_t* __restrict__ y, long long n, ${GEOMETRY_PARAMS}, ${EPILOGUE_PARAMS}) {
  ${GRID_STRIDE} {
    tdm_idx t_ = (tdm_idx)i;
    const long long ow = t_ % (tdm_idx)WO; t_ /= (tdm_idx)WO;
    const long long oh = t_ % (tdm_idx)HO; t_ /= (tdm_idx)HO;
    const long long o = t_ % (tdm_idx)O, img = t_ / (tdm_idx)O;
    const long long c0 = (long long)((int)o / (int)OG) * CG;  // channel counts fit an int
    X_c s = ldX(b, o);
    for (long long ci = 0; ci < CG; ++ci) {
      const X_t* plane = x + ((img * C + c0 + ci) * H) * W;
      const X_t* wk = w + (o * CG + ci) * KH * KW;
#pragma unroll
      for (long long r = 0; r < FKH; ++r) {
        long long ih = oh * SH - PT + r * DH;
        if (ih < 0 || ih >= H) continue;
#pragma unroll
        for (long long q = 0; q < FKW; ++q) {
          long long iw = ow * SW - PL + q * DW;
          if (iw < 0 || iw >= W) continue;
          s += ldX(plane, ih * W + iw) * ldX(wk, r * KW + q);
        }
      }
    }
    ${STORE_ACTIVATED}
  }
}`,
  defines: (args, scalars) => {
    const g = convGeometry('onnx_conv', descsOf(args), scalars);
    return { ...epilogueDefines('onnx_conv', scalars), ...directDefines(g) };
  },
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
        ...epilogueParamList('onnx_conv', scalars),
      ]);
  },
};

/** Scalars a native conv adds for its helper programs: the scratch address and the first image. */
interface HelperScalars extends Scalars {
  readonly col: number;
  readonly img0: number;
  readonly images: number;
}

/**
 * col[j][(ci·kh + r)·kw + q][oh·wo + ow] = x[img0 + j, ci, ih, iw] (group 1) for `images` images,
 * zeros in the padding: each image's columns one contiguous K×P block.
 */
const im2colProgram: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_im2col',
  defines: (args, scalars) => {
    const g = convGeometry('onnx_conv', descsOf(args), scalars);
    return { IDX32: idx32((scalars as HelperScalars).images * g.cg * g.kh * g.kw * g.ho * g.wo) };
  },
  source: `${CUDA_INDEX}
extern "C" __global__ void tdm_onnx_im2col(const X_t* __restrict__ x, X_t* __restrict__ col, long long n,
    long long img0, ${GEOMETRY_PARAMS}) {
  ${GRID_STRIDE} {
    tdm_idx t_ = (tdm_idx)i;
    const long long p = t_ % (tdm_idx)(HO * WO); t_ /= (tdm_idx)(HO * WO);
    const long long row = t_ % (tdm_idx)(CG * KH * KW), img = img0 + t_ / (tdm_idx)(CG * KH * KW);
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
    return elementwiseGrid((scalars as HelperScalars).images * g.cg * g.kh * g.kw * g.ho * g.wo);
  },
  block: () => BLOCK_DIM,
  params: (args, scalars) => {
    const g = convGeometry('onnx_conv', descsOf(args), scalars);
    const h = scalars as HelperScalars;
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'addr', value: h.col },
      { kind: 'i64', value: h.images * g.cg * g.kh * g.kw * g.ho * g.wo },
      { kind: 'i64', value: h.img0 },
      ...geometryParams(g),
    ];
  },
};

/** y[n,o,p] = b[o] for every image: the GEMMs then add onto it (beta = 1). */
const biasFill: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_bias_fill',
  source: `${CUDA_INDEX}
extern "C" __global__ void tdm_onnx_bias_fill(const X_t* __restrict__ b, X_t* __restrict__ y, long long n,
    long long O, long long P) {
  ${GRID_STRIDE} y[i] = b[((tdm_idx)i / (tdm_idx)P) % (tdm_idx)O];
}`,
  dtypes: (args) => ({ X: args[3]!.desc.dtype }),
  defines: (args) => ({ IDX32: idx32(numel(args[3]!.desc.shape)) }),
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

/**
 * y = epilogue(act(y [+ b[o]])) in place after the GEMMs: ADD_BIAS 1 when the GEMMs wrote the bare
 * product (f32/f64), 0 when y was preset to the bias (f16/bf16).
 */
const gemmEpilogue: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_conv_epilogue',
  source: `${MATH_OVERLOADS}${UNARY_CUDA_HELPERS}${CUDA_INDEX}
extern "C" __global__ void tdm_onnx_conv_epilogue(const X_t* __restrict__ b, X_t* __restrict__ y, long long n,
    long long O, long long P, ${EPILOGUE_PARAMS}) {
  ${GRID_STRIDE} {
#if ADD_BIAS
    X_c s = ldX(y, i) + ldX(b, ((tdm_idx)i / (tdm_idx)P) % (tdm_idx)O);
#else
    X_c s = ldX(y, i);
#endif
    ${STORE_ACTIVATED}
  }
}`,
  dtypes: (args) => ({ X: args[3]!.desc.dtype }),
  defines: (args, scalars) => ({
    ...epilogueDefines('onnx_conv', scalars),
    ADD_BIAS: biasInEpilogue(args[3]!.desc.dtype) ? 1 : 0,
    IDX32: idx32(numel(args[3]!.desc.shape)),
  }),
  grid: (args) => elementwiseGrid(args[3]!.desc.shape.reduce((a, d) => a * d, 1)),
  block: () => BLOCK_DIM,
  params: (args, scalars) => {
    const [, o, ho, wo] = args[3]!.desc.shape as [number, number, number, number];
    return [
      { kind: 'ptr', arg: 2 },
      { kind: 'ptr', arg: 3 },
      { kind: 'i64', value: args[3]!.desc.shape.reduce((a, d) => a * d, 1) },
      { kind: 'i64', value: o },
      { kind: 'i64', value: ho * wo },
      ...epilogueParamList('onnx_conv', scalars),
    ];
  },
};

/** f32/f64 GEMMs write the bare product and the epilogue pass adds the bias (no separate fill). */
function biasInEpilogue(dtype: string): boolean {
  return dtype === 'f32' || dtype === 'f64';
}

/** Products per output under which the direct kernel beats a GEMM's launch and scratch traffic. */
const GEMM_MIN_K = 16;
const POINTWISE_GEMM_MIN_K = 4;
/** im2col scratch per chunk of images (the chunk's GEMMs run as one strided batch). */
const IM2COL_CHUNK_BYTES = 256 << 20;

function runConv(ctx: CudaKernelContext, args: readonly CudaArg[], scalars: Scalars): void {
  const g = convGeometry('onnx_conv', descsOf(args), scalars);
  const k = g.cg * g.kh * g.kw;
  const p = g.ho * g.wo;
  const pointwise =
    g.kh === 1 && g.kw === 1 && g.sh === 1 && g.sw === 1 && g.pads.every((v) => v === 0) && p === g.h * g.w;
  // A pointwise conv reads x in place (no im2col) as one batched product: worth it from a few channels
  // (PaddleOCR's 12 -> 96 at 160x160 took 1 ms in the direct kernel, each x value read 96 times).
  if (g.group !== 1 || k < (pointwise ? POINTWISE_GEMM_MIN_K : GEMM_MIN_K)) {
    ctx.launch(convDirect, args, scalars);
    return;
  }
  const [x, w, , y] = args as [CudaArg, CudaArg, CudaArg, CudaArg];
  const dtype = y.desc.dtype;
  const size = bytesPerElement(dtype);
  // Few output channels and a real window: the tiled kernel (TANDEM_ONNX_TILED_CONV=0 turns it off).
  if (!pointwise && process.env.TANDEM_ONNX_TILED_CONV !== '0' && tiledConvFits(g, dtype)) {
    ctx.launch(tiledConv, args, scalars);
    return;
  }
  const epilogue = convEpilogue('onnx_conv', scalars);
  const precision = dtype === 'f32' ? convPrecision(scalars) : 'default';
  const biasLater = biasInEpilogue(dtype) && epilogue.instrs.length > 0;
  if (!biasLater) ctx.launch(biasFill, args, scalars);
  const chunk = pointwise ? g.n : Math.max(1, Math.min(g.n, Math.floor(IM2COL_CHUNK_BYTES / (k * p * size))));
  const col = pointwise ? 0 : ctx.scratch(chunk * k * p * size);
  for (let img0 = 0; img0 < g.n; img0 += chunk) {
    const images = Math.min(chunk, g.n - img0);
    if (!pointwise) ctx.launch(im2colProgram, args, { ...scalars, col, img0, images });
    const b = pointwise ? x.ptr + img0 * g.c * p * size : col;
    const c = y.ptr + img0 * g.o * p * size;
    const strideB = pointwise ? g.c * p : k * p;
    const beta = biasLater ? 0 : 1;
    // One strided-batched product for the chunk (w shared: stride 0); one GEMM per image if cuBLASLt declines.
    const batched =
      images > 1 &&
      ctx.matmul({
        dtype,
        transA: false,
        transB: false,
        m: g.o,
        n: p,
        k,
        alpha: 1,
        beta,
        a: w.ptr,
        b,
        c,
        epilogue: 'none',
        batch: { count: images, strideA: 0, strideB, strideC: g.o * p },
        precision,
      });
    if (batched) continue;
    for (let j = 0; j < images; j++) {
      ctx.gemm({
        dtype,
        precision,
        transA: false,
        transB: false,
        m: g.o,
        n: p,
        k,
        alpha: 1,
        beta,
        a: w.ptr,
        b: b + j * strideB * size,
        c: c + j * g.o * p * size,
      });
    }
  }
  if (epilogue.instrs.length > 0) ctx.launch(gemmEpilogue, args, scalars);
}

export const onnxConvCuda: CudaNative = { kind: 'native', run: runConv };

export const onnxConvTransposeCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_conv_transpose',
  source: `${MATH_OVERLOADS}${UNARY_CUDA_HELPERS}${CUDA_INDEX}
extern "C" __global__ void tdm_onnx_conv_transpose(const X_t* __restrict__ x, const X_t* __restrict__ w,
    const X_t* __restrict__ b, X_t* __restrict__ y, long long n, ${GEOMETRY_PARAMS}, ${EPILOGUE_PARAMS}) {
  ${GRID_STRIDE} {
    tdm_idx t_ = (tdm_idx)i;
    const long long ow = t_ % (tdm_idx)WO; t_ /= (tdm_idx)WO;
    const long long oh = t_ % (tdm_idx)HO; t_ /= (tdm_idx)HO;
    const long long o = t_ % (tdm_idx)O, img = t_ / (tdm_idx)O;
    const long long gi = (int)o / (int)OG, wo = o - gi * OG;
    X_c s = ldX(b, o);
#pragma unroll
    for (long long r = 0; r < FKH; ++r) {
      // Spatial coordinates fit an int: 32-bit division and remainder (64-bit ones are long sequences).
      const int th = (int)(oh + PT - r * DH), ih = th / (int)SH;
      if (th < 0 || th != ih * (int)SH || ih >= (int)H) continue;
#pragma unroll
      for (long long q = 0; q < FKW; ++q) {
        const int tw = (int)(ow + PL - q * DW), iw = tw / (int)SW;
        if (tw < 0 || tw != iw * (int)SW || iw >= (int)W) continue;
        for (long long ci = 0; ci < CG; ++ci) {
          long long c = gi * CG + ci;
          s += ldX(x, ((img * C + c) * H + ih) * W + iw) * ldX(w, ((c * OG + wo) * KH + r) * KW + q);
        }
      }
    }
    ${STORE_ACTIVATED}
  }
}`,
  defines: (args, scalars) => {
    const g = convTransposeGeometry('onnx_conv_transpose', descsOf(args), scalars);
    return { ...epilogueDefines('onnx_conv_transpose', scalars), ...directDefines(g) };
  },
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
        ...epilogueParamList('onnx_conv_transpose', scalars),
      ]);
  },
};
