/**
 * onnx_resize: ONNX Resize on [N,C,H,W] over H and W, nearest (four rounding modes), bilinear or
 * bicubic (cubic_coeff_a, exclude_outside), with ONNX's coordinate transformation modes. Definition,
 * float64 reference, CPU and CUDA. The source coordinate of output index o along an axis of in → out
 * with scale s (the `scales` input, or out/in when sizes were given) is:
 *   half_pixel (o + ½)/s − ½ · pytorch_half_pixel out > 1 ? (o + ½)/s − ½ : 0 · align_corners
 *   out > 1 ? o·(in − 1)/(out − 1) : 0 · asymmetric o/s · tf_half_pixel_for_nn (o + ½)/s ·
 *   tf_crop_and_resize out > 1 ? r0·(in − 1) + o·(r1 − r0)·(in − 1)/(out − 1) : (r0 + r1)·(in − 1)/2,
 *   where a coordinate outside [0, in − 1] gives extrapolationValue.
 * Cubic reads the 4 pixels ⌊x⌋ − 1 … ⌊x⌋ + 2 (clamped to the edge) with Keys' weights for coefficient
 * A; exclude_outside gives pixels outside the image weight 0 and renormalizes (ONNX's reference).
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

export const RESIZE_MODES = ['nearest', 'linear', 'cubic'] as const;
export const COORDINATE_MODES = [
  'half_pixel',
  'asymmetric',
  'align_corners',
  'pytorch_half_pixel',
  'tf_half_pixel_for_nn',
  'tf_crop_and_resize',
] as const;
const TF_CROP = 5;
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
  readonly cubicA: number;
  readonly excludeOutside: boolean;
  /** tf_crop_and_resize's region (fractions of in − 1) per axis, and the value outside the image. */
  readonly roiH: readonly [number, number];
  readonly roiW: readonly [number, number];
  readonly extrapolation: number;
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
    cubicA: numberScalar(op, scalars, 'cubicCoeffA', -0.75),
    excludeOutside: scalars['excludeOutside'] === true,
    roiH: [numberScalar(op, scalars, 'roiH0', 0), numberScalar(op, scalars, 'roiH1', 1)],
    roiW: [numberScalar(op, scalars, 'roiW0', 0), numberScalar(op, scalars, 'roiW1', 1)],
    extrapolation: numberScalar(op, scalars, 'extrapolationValue', 0),
  };
}

export const onnxResizeDef = onnxDef(
  'onnx_resize',
  [
    ['x', 'r'],
    ['y', 'w'],
  ],
  [
    'mode',
    'coordinateTransformationMode',
    'nearestMode',
    'scaleH',
    'scaleW',
    'cubicCoeffA',
    'excludeOutside',
    'roiH0',
    'roiH1',
    'roiW0',
    'roiW1',
    'extrapolationValue',
  ],
  (args, scalars) => {
    requireDTypes('onnx_resize', args, ['x', 'y'], FLOAT_DTYPES);
    resizeGeometry(args.x!, args.y!, scalars);
  },
  (args) => streamCost(args, 8),
);

function sourceCoord(
  coord: number,
  o: number,
  scale: number,
  inSize: number,
  outSize: number,
  roi: readonly [number, number] = [0, 1],
): number {
  switch (coord) {
    case TF_CROP:
      return outSize > 1
        ? roi[0] * (inSize - 1) + (o * (roi[1] - roi[0]) * (inSize - 1)) / (outSize - 1)
        : 0.5 * (roi[0] + roi[1]) * (inSize - 1);
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

/** Nearest and linear taps as two indices and the second one's weight (the WebGPU kernel's tables). */
export function axisTable(g: ResizeGeometry, inSize: number, outSize: number, scale: number): AxisTable {
  const taps = axisTaps(g, inSize, outSize, scale, [0, 1]);
  const last = taps.taps - 1;
  return {
    i0: Int32Array.from({ length: outSize }, (_, o) => taps.idx[o * taps.taps]!),
    i1: Int32Array.from({ length: outSize }, (_, o) => taps.idx[o * taps.taps + last]!),
    t: Float64Array.from({ length: outSize }, (_, o) => (last === 0 ? 0 : taps.w[o * taps.taps + last]!)),
  };
}

/** Keys' cubic convolution weight of a pixel at distance d (ONNX's cubic_coeff_a = A). */
function cubicWeight(A: number, d: number): number {
  const x = Math.abs(d);
  if (x <= 1) return ((A + 2) * x - (A + 3)) * x * x + 1;
  if (x < 2) return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
  return 0;
}

/** Per output index along one axis: `taps` source indices and weights, and whether it lies outside. */
export interface AxisTaps {
  readonly taps: number;
  readonly idx: Int32Array;
  readonly w: Float64Array;
  readonly outside: Uint8Array;
}

export function axisTaps(
  g: ResizeGeometry,
  inSize: number,
  outSize: number,
  scale: number,
  roi: readonly [number, number],
): AxisTaps {
  const taps = g.mode === 'nearest' ? 1 : g.mode === 'linear' ? 2 : 4;
  const r = {
    taps,
    idx: new Int32Array(outSize * taps),
    w: new Float64Array(outSize * taps),
    outside: new Uint8Array(outSize),
  };
  const clampi = (i: number) => Math.min(Math.max(i, 0), inSize - 1);
  for (let o = 0; o < outSize; o++) {
    const v = sourceCoord(g.coord, o, scale, inSize, outSize, roi);
    if (g.coord === TF_CROP && (v < 0 || v > inSize - 1)) r.outside[o] = 1;
    const at = o * taps;
    if (g.mode === 'nearest') {
      r.idx[at] = nearestIndex(g.nearest, v, inSize);
      r.w[at] = 1;
    } else if (g.mode === 'linear') {
      const c = Math.min(Math.max(v, 0), inSize - 1);
      const i0 = Math.floor(c);
      r.idx[at] = i0;
      r.idx[at + 1] = Math.min(i0 + 1, inSize - 1);
      r.w[at] = 1 - (c - i0);
      r.w[at + 1] = c - i0;
    } else {
      const i0 = Math.floor(v);
      const t = v - i0;
      let sum = 0;
      for (let k = 0; k < 4; k++) {
        const i = i0 - 1 + k;
        const w = g.excludeOutside && (i < 0 || i >= inSize) ? 0 : cubicWeight(g.cubicA, t + 1 - k);
        r.idx[at + k] = clampi(i);
        r.w[at + k] = w;
        sum += w;
      }
      if (g.excludeOutside) for (let k = 0; k < 4; k++) r.w[at + k]! /= sum;
    }
  }
  return r;
}

function resizeInto(g: ResizeGeometry, x: ArrayLike<number>, y: FloatArray): void {
  const rows = axisTaps(g, g.h, g.ho, g.scaleH, g.roiH);
  const cols = axisTaps(g, g.w, g.wo, g.scaleW, g.roiW);
  let at = 0;
  for (let p = 0; p < g.planes; p++) {
    const plane = p * g.h * g.w;
    for (let oh = 0; oh < g.ho; oh++) {
      for (let ow = 0; ow < g.wo; ow++) {
        if (rows.outside[oh] || cols.outside[ow]) {
          y[at++] = g.extrapolation;
          continue;
        }
        // Σ_i wr_i · Σ_j wc_j · x: the same order of operations as the CUDA kernel.
        let v = 0;
        for (let i = 0; i < rows.taps; i++) {
          const row = plane + rows.idx[oh * rows.taps + i]! * g.w;
          let acc = 0;
          for (let j = 0; j < cols.taps; j++)
            acc += x[row + cols.idx[ow * cols.taps + j]!]! * cols.w[ow * cols.taps + j]!;
          v += acc * rows.w[oh * rows.taps + i]!;
        }
        y[at++] = v;
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
static __device__ double src_coord(long long o, double scale, long long in, long long out, double r0, double r1) {
#if COORD == 0
  return (o + 0.5) / scale - 0.5;
#elif COORD == 1
  return o / scale;
#elif COORD == 2
  return out > 1 ? (double)(o * (in - 1)) / (double)(out - 1) : 0.0;
#elif COORD == 3
  return out > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
#elif COORD == 4
  return (o + 0.5) / scale;
#else
  return out > 1 ? r0 * (in - 1) + o * (r1 - r0) * (in - 1) / (double)(out - 1) : 0.5 * (r0 + r1) * (in - 1);
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
#define TAPS (MODE == 0 ? 1 : (MODE == 1 ? 2 : 4))
static __device__ double cubic_w(double A, double d) {
  const double x = fabs(d);
  if (x <= 1) return ((A + 2) * x - (A + 3)) * x * x + 1;
  if (x < 2) return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
  return 0;
}
/* The source indices and weights of coordinate v along an axis of n pixels (the CPU's axisTaps). */
static __device__ void axis_taps(double v, long long n, double A, long long* idx, double* w) {
#if MODE == 0
  idx[0] = nearest(v, n); w[0] = 1;
#elif MODE == 1
  const double c = v < 0 ? 0 : (v > n - 1 ? (double)(n - 1) : v);
  const long long i0 = (long long)floor(c);
  idx[0] = i0; idx[1] = i0 + 1 < n ? i0 + 1 : n - 1;
  w[0] = 1 - (c - i0); w[1] = c - i0;
#else
  const long long i0 = (long long)floor(v);
  const double t = v - i0;
  double sum = 0;
  for (int k = 0; k < 4; k++) {
    const long long j = i0 - 1 + k;
    const double wk = (EXCLUDE && (j < 0 || j >= n)) ? 0.0 : cubic_w(A, t + 1 - k);
    idx[k] = clampi(j, n); w[k] = wk; sum += wk;
  }
  if (EXCLUDE) for (int k = 0; k < 4; k++) w[k] /= sum;
#endif
}
extern "C" __global__ void tdm_onnx_resize(const X_t* __restrict__ x, X_t* __restrict__ y, long long n,
    long long H, long long W, long long HO, long long WO, double sh, double sw, double A,
    double rh0, double rh1, double rw0, double rw1, double extrap) {
  ${GRID_STRIDE} {
    tdm_idx t_ = (tdm_idx)i;
    const long long ow = t_ % (tdm_idx)WO; t_ /= (tdm_idx)WO;
    const long long oh = t_ % (tdm_idx)HO, plane = t_ / (tdm_idx)HO;
    const X_t* xp = x + plane * H * W;
    const double vh = src_coord(oh, sh, H, HO, rh0, rh1), vw = src_coord(ow, sw, W, WO, rw0, rw1);
#if COORD == 5
    if (vh < 0 || vh > H - 1 || vw < 0 || vw > W - 1) { stX(y, i, (X_c)extrap); continue; }
#endif
    long long ir[TAPS], ic[TAPS];
    double wr[TAPS], wc[TAPS];
    axis_taps(vh, H, A, ir, wr);
    axis_taps(vw, W, A, ic, wc);
#if MODE == 0
    y[i] = xp[ir[0] * W + ic[0]];
#else
    X_c v = 0;
    for (int a = 0; a < TAPS; a++) {
      X_c acc = 0;
      for (int b = 0; b < TAPS; b++) acc += ldX(xp, ir[a] * W + ic[b]) * (X_c)wc[b];
      v += acc * (X_c)wr[a];
    }
    stX(y, i, v);
#endif
  }
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  defines: (args, scalars) => {
    const g = resizeGeometry(args[0]!.desc, args[1]!.desc, scalars);
    return {
      MODE: RESIZE_MODES.indexOf(g.mode),
      EXCLUDE: g.excludeOutside ? 1 : 0,
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
      ...[g.cubicA, g.roiH[0], g.roiH[1], g.roiW[0], g.roiW[1], g.extrapolation].map((value): CudaParam => ({
        kind: 'f64',
        value,
      })),
    ];
  },
};
