/**
 * onnx_resize: ONNX Resize on [N,C,H,W] over H and W, nearest (four rounding modes) or bilinear, with
 * the coordinate transformation modes PaddleOCR and common exporters use. Definition, float64
 * reference, CPU and CUDA. The source coordinate of output index o along an axis of in → out with
 * scale s (the `scales` input, or out/in when sizes were given) is:
 *   half_pixel (o + ½)/s − ½ · pytorch_half_pixel out > 1 ? (o + ½)/s − ½ : 0 · align_corners
 *   out > 1 ? o·(in − 1)/(out − 1) : 0 · asymmetric o/s · tf_half_pixel_for_nn (o + ½)/s.
 */
import { numel } from '../../core/shape.js';
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import type { CudaParam, CudaProgram } from '../../devices/cuda/kernel-api.js';
import type { Scalars, TensorDesc } from '../../devices/device.js';
import { type FloatArray, floatCopyOf, isHalf, storeFloat } from '../common/cpu-float.js';
import { BLOCK_DIM, GRID_STRIDE, elementwiseGrid } from '../common/cuda.js';
import type { ReferenceFn } from '../common/reference.js';
import { enumScalar, numberScalar } from '../common/scalars.js';
import { CUDA_INDEX, FLOAT_DTYPES, i64Params, idx32, onnxDef, requireDTypes, streamCost } from './common.js';
import { requireRank } from './shapes.js';
import { TandemError } from '../../core/errors.js';

export const RESIZE_MODES = ['nearest', 'linear'] as const;
export const COORDINATE_MODES = [
  'half_pixel',
  'asymmetric',
  'align_corners',
  'pytorch_half_pixel',
  'tf_half_pixel_for_nn',
] as const;
export const NEAREST_MODES = ['round_prefer_floor', 'round_prefer_ceil', 'floor', 'ceil'] as const;

export interface ResizeGeometry {
  readonly mode: (typeof RESIZE_MODES)[number];
  readonly coord: number;
  readonly nearest: number;
  readonly planes: number;
  readonly h: number;
  readonly w: number;
  readonly ho: number;
  readonly wo: number;
  readonly scaleH: number;
  readonly scaleW: number;
}

export function resizeGeometry(x: TensorDesc, y: TensorDesc, scalars: Scalars): ResizeGeometry {
  const op = 'onnx_resize';
  requireRank(op, 'x', x.shape, 4, 4);
  requireRank(op, 'y', y.shape, 4, 4);
  const [n, c, h, w] = x.shape as [number, number, number, number];
  const [yn, yc, ho, wo] = y.shape as [number, number, number, number];
  if (yn !== n || yc !== c || h < 1 || w < 1) {
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `${op}: y [${y.shape.join(',')}] must keep x's N and C, x [${x.shape.join(',')}] non-empty`,
      { op },
    );
  }
  const scaleH = numberScalar(op, scalars, 'scaleH', ho / h);
  const scaleW = numberScalar(op, scalars, 'scaleW', wo / w);
  if (!(scaleH > 0 && scaleW > 0)) {
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `${op}: scales must be > 0`, {
      op,
      scalar: 'scaleH',
    });
  }
  return {
    mode: enumScalar(op, scalars, 'mode', RESIZE_MODES, 'nearest'),
    coord: COORDINATE_MODES.indexOf(
      enumScalar(op, scalars, 'coordinateTransformationMode', COORDINATE_MODES, 'half_pixel'),
    ),
    nearest: NEAREST_MODES.indexOf(
      enumScalar(op, scalars, 'nearestMode', NEAREST_MODES, 'round_prefer_floor'),
    ),
    planes: n * c,
    h,
    w,
    ho,
    wo,
    scaleH,
    scaleW,
  };
}

export const onnxResizeDef = onnxDef(
  'onnx_resize',
  [
    ['x', 'r'],
    ['y', 'w'],
  ],
  ['mode', 'coordinateTransformationMode', 'nearestMode', 'scaleH', 'scaleW'],
  (args, scalars) => {
    requireDTypes('onnx_resize', args, ['x', 'y'], FLOAT_DTYPES);
    resizeGeometry(args.x!, args.y!, scalars);
  },
  (args) => streamCost(args, 8),
);

function sourceCoord(coord: number, o: number, scale: number, inSize: number, outSize: number): number {
  switch (coord) {
    case 0:
      return (o + 0.5) / scale - 0.5;
    case 1:
      return o / scale;
    case 2:
      return outSize > 1 ? (o * (inSize - 1)) / (outSize - 1) : 0;
    case 3:
      return outSize > 1 ? (o + 0.5) / scale - 0.5 : 0;
    default:
      return (o + 0.5) / scale;
  }
}

function nearestIndex(mode: number, v: number, inSize: number): number {
  let i: number;
  if (mode === 0) i = v === Math.floor(v) + 0.5 ? Math.floor(v) : Math.round(v);
  else if (mode === 1) i = Math.round(v);
  else if (mode === 2) i = Math.floor(v);
  else i = Math.ceil(v);
  return Math.min(Math.max(i, 0), inSize - 1);
}

/** Per output index along one axis: two source indices and the weight of the second. */
export interface AxisTable {
  readonly i0: Int32Array;
  readonly i1: Int32Array;
  readonly t: Float64Array;
}

export function axisTable(g: ResizeGeometry, inSize: number, outSize: number, scale: number): AxisTable {
  const table = { i0: new Int32Array(outSize), i1: new Int32Array(outSize), t: new Float64Array(outSize) };
  for (let o = 0; o < outSize; o++) {
    const v = sourceCoord(g.coord, o, scale, inSize, outSize);
    if (g.mode === 'nearest') {
      table.i0[o] = table.i1[o] = nearestIndex(g.nearest, v, inSize);
      continue;
    }
    const c = Math.min(Math.max(v, 0), inSize - 1);
    const i0 = Math.floor(c);
    table.i0[o] = i0;
    table.i1[o] = Math.min(i0 + 1, inSize - 1);
    table.t[o] = c - i0;
  }
  return table;
}

function resizeInto(g: ResizeGeometry, x: ArrayLike<number>, y: FloatArray): void {
  const rows = axisTable(g, g.h, g.ho, g.scaleH);
  const cols = axisTable(g, g.w, g.wo, g.scaleW);
  let at = 0;
  for (let p = 0; p < g.planes; p++) {
    const plane = p * g.h * g.w;
    for (let oh = 0; oh < g.ho; oh++) {
      const r0 = plane + rows.i0[oh]! * g.w;
      const r1 = plane + rows.i1[oh]! * g.w;
      const tr = rows.t[oh]!;
      if (g.mode === 'nearest') {
        for (let ow = 0; ow < g.wo; ow++) y[at++] = x[r0 + cols.i0[ow]!]!;
        continue;
      }
      for (let ow = 0; ow < g.wo; ow++) {
        const c0 = cols.i0[ow]!;
        const c1 = cols.i1[ow]!;
        const tc = cols.t[ow]!;
        const top = x[r0 + c0]! * (1 - tc) + x[r0 + c1]! * tc;
        const bottom = x[r1 + c0]! * (1 - tc) + x[r1 + c1]! * tc;
        y[at++] = top * (1 - tr) + bottom * tr;
      }
    }
  }
}

export const onnxResizeReference: ReferenceFn = (args, scalars) => {
  const g = resizeGeometry(args.x!.desc, args.y!.desc, scalars);
  const y = new Float64Array(g.planes * g.ho * g.wo);
  resizeInto(g, args.x!.values, y);
  return { y };
};

export const onnxResizeCpu: CpuKernel = (args, scalars) => {
  const [x, y] = args as [CpuArg, CpuArg];
  const g = resizeGeometry(x.desc, y.desc, scalars);
  const yf = isHalf(y.desc.dtype) ? new Float32Array(y.data.length) : (y.data as FloatArray);
  resizeInto(g, floatCopyOf(x), yf);
  storeFloat(y, yf);
};

/** Coordinates in double so every backend picks the same nearest source index as the reference. */
export const onnxResizeCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_resize',
  source: `${CUDA_INDEX}
static __device__ double src_coord(long long o, double scale, long long in, long long out) {
#if COORD == 0
  return (o + 0.5) / scale - 0.5;
#elif COORD == 1
  return o / scale;
#elif COORD == 2
  return out > 1 ? (double)(o * (in - 1)) / (double)(out - 1) : 0.0;
#elif COORD == 3
  return out > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
#else
  return (o + 0.5) / scale;
#endif
}
static __device__ long long clampi(long long i, long long n) { return i < 0 ? 0 : (i >= n ? n - 1 : i); }
static __device__ long long nearest(double v, long long n) {
#if NEAREST == 0
  long long i = (v == floor(v) + 0.5) ? (long long)floor(v) : (long long)floor(v + 0.5);
#elif NEAREST == 1
  long long i = (long long)floor(v + 0.5);
#elif NEAREST == 2
  long long i = (long long)floor(v);
#else
  long long i = (long long)ceil(v);
#endif
  return clampi(i, n);
}
extern "C" __global__ void tdm_onnx_resize(const X_t* __restrict__ x, X_t* __restrict__ y, long long n,
    long long H, long long W, long long HO, long long WO, double sh, double sw) {
  ${GRID_STRIDE} {
    tdm_idx t_ = (tdm_idx)i;
    const long long ow = t_ % (tdm_idx)WO; t_ /= (tdm_idx)WO;
    const long long oh = t_ % (tdm_idx)HO, plane = t_ / (tdm_idx)HO;
    const X_t* xp = x + plane * H * W;
    double vh = src_coord(oh, sh, H, HO), vw = src_coord(ow, sw, W, WO);
#if LINEAR
    vh = vh < 0 ? 0 : (vh > H - 1 ? (double)(H - 1) : vh);
    vw = vw < 0 ? 0 : (vw > W - 1 ? (double)(W - 1) : vw);
    long long r0 = (long long)floor(vh), c0 = (long long)floor(vw);
    long long r1 = r0 + 1 < H ? r0 + 1 : H - 1, c1 = c0 + 1 < W ? c0 + 1 : W - 1;
    X_c tr = (X_c)(vh - r0), tc = (X_c)(vw - c0);
    X_c top = ldX(xp, r0 * W + c0) * ((X_c)1 - tc) + ldX(xp, r0 * W + c1) * tc;
    X_c bottom = ldX(xp, r1 * W + c0) * ((X_c)1 - tc) + ldX(xp, r1 * W + c1) * tc;
    stX(y, i, top * ((X_c)1 - tr) + bottom * tr);
#else
    y[i] = xp[nearest(vh, H) * W + nearest(vw, W)];
#endif
  }
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  defines: (args, scalars) => {
    const g = resizeGeometry(args[0]!.desc, args[1]!.desc, scalars);
    return {
      LINEAR: g.mode === 'linear' ? 1 : 0,
      COORD: g.coord,
      NEAREST: g.nearest,
      // 32-bit output index arithmetic when every index fits (CUDA_INDEX).
      IDX32: idx32(g.planes * g.ho * g.wo),
    };
  },
  grid: (args) => elementwiseGrid(numel(args[1]!.desc.shape)),
  block: () => BLOCK_DIM,
  params: (args, scalars): CudaParam[] => {
    const g = resizeGeometry(args[0]!.desc, args[1]!.desc, scalars);
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      ...i64Params([g.planes * g.ho * g.wo, g.h, g.w, g.ho, g.wo]),
      { kind: 'f64', value: g.scaleH },
      { kind: 'f64', value: g.scaleW },
    ];
  },
};
