/**
 * onnx_grid_sample: ONNX GridSample (opset 16's 4-d form) on x [N,C,H,W] at the normalized points of
 * grid [N,Ho,Wo,2] (x then y, −1 … 1), y [N,C,Ho,Wo]. Definition, float64 reference, CPU and CUDA,
 * written from ONNX's reference implementation (which follows PyTorch's grid_sampler):
 *   - a point is denormalized with align_corners ((g + 1)/2·(d − 1)) or without (((g + 1)·d − 1)/2);
 *   - nearest rounds it half to even (nearbyint);
 *   - a point outside the border range ([0, d − 1] with align_corners, [−½, d − ½] without) is clamped
 *     to [0, d − 1] (padding border) or reflected back inside (padding reflection);
 *   - nearest, bilinear (2 × 2) and bicubic (4 × 4, A = −0.75) read pixels through the padding mode:
 *     zeros gives 0 outside the image, border clamps the index, reflection reflects it.
 * Interpolation runs along x within each row first, then along y (the reference's order).
 */
import { TandemError } from '../../core/errors.js';
import { numel } from '../../core/shape.js';
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import type { CudaParam, CudaProgram } from '../../devices/cuda/kernel-api.js';
import type { Scalars, TensorDesc } from '../../devices/device.js';
import { type FloatArray, floatCopyOf, isHalf, storeFloat } from '../common/cpu-float.js';
import { BLOCK_DIM, GRID_STRIDE, elementwiseGrid } from '../common/cuda.js';
import type { ReferenceFn } from '../common/reference.js';
import { enumScalar } from '../common/scalars.js';
import { CUDA_INDEX, FLOAT_DTYPES, i64Params, idx32, onnxDef, requireDTypes, streamCost } from './common.js';
import { requireRank, requireShape } from './shapes.js';

export const GRID_SAMPLE_MODES = ['nearest', 'linear', 'cubic'] as const;
export const GRID_SAMPLE_PADDING = ['zeros', 'border', 'reflection'] as const;

export interface GridSampleGeometry {
  readonly mode: number;
  readonly padding: number;
  readonly align: boolean;
  readonly n: number;
  readonly c: number;
  readonly h: number;
  readonly w: number;
  readonly ho: number;
  readonly wo: number;
}

export function gridSampleGeometry(
  x: Pick<TensorDesc, 'shape'>,
  grid: Pick<TensorDesc, 'shape'>,
  scalars: Scalars,
): GridSampleGeometry {
  const op = 'onnx_grid_sample';
  requireRank(op, 'x', x.shape, 4, 4);
  requireRank(op, 'grid', grid.shape, 4, 4);
  const [n, c, h, w] = x.shape as [number, number, number, number];
  const [gn, ho, wo, two] = grid.shape as [number, number, number, number];
  if (gn !== n || two !== 2 || h < 1 || w < 1)
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `${op}: grid [${grid.shape.join(',')}] must be [${n},Ho,Wo,2] for x [${x.shape.join(',')}] (non-empty)`,
      { op },
    );
  return {
    mode: GRID_SAMPLE_MODES.indexOf(enumScalar(op, scalars, 'mode', GRID_SAMPLE_MODES, 'linear')),
    padding: GRID_SAMPLE_PADDING.indexOf(enumScalar(op, scalars, 'padding', GRID_SAMPLE_PADDING, 'zeros')),
    align: scalars['alignCorners'] === true,
    n,
    c,
    h,
    w,
    ho,
    wo,
  };
}

export const onnxGridSampleDef = onnxDef(
  'onnx_grid_sample',
  [
    ['x', 'r'],
    ['grid', 'r'],
    ['y', 'w'],
  ],
  ['mode', 'padding', 'alignCorners'],
  (args, scalars) => {
    requireDTypes('onnx_grid_sample', args, ['x', 'grid', 'y'], FLOAT_DTYPES);
    const g = gridSampleGeometry(args.x!, args.grid!, scalars);
    requireShape('onnx_grid_sample', 'y', args.y!.shape, [g.n, g.c, g.ho, g.wo]);
  },
  (args) => streamCost(args, 32),
);

/** Reflects v into [lo, hi] by the nearer border, as often as needed (the reference's _gs_reflect). */
function reflect(v: number, lo: number, hi: number): number {
  const range = hi - lo;
  if (v < lo) {
    const dx = lo - v;
    const k = Math.trunc(dx / range);
    const r = dx - k * range;
    return k % 2 === 0 ? lo + r : hi - r;
  }
  if (v > hi) {
    const dx = v - hi;
    const k = Math.trunc(dx / range);
    const r = dx - k * range;
    return k % 2 === 0 ? hi - r : lo + r;
  }
  return v;
}

/** Round half to even (C's nearbyint in the default rounding mode). */
function rint(v: number): number {
  const f = Math.floor(v);
  const d = v - f;
  return d > 0.5 || (d === 0.5 && f % 2 !== 0) ? f + 1 : f;
}

function cubicCoeffs(t: number): number[] {
  const A = -0.75;
  const near = (x: number) => ((A + 2) * x - (A + 3)) * x * x + 1;
  const far = (x: number) => ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
  return [far(t + 1), near(t), near(1 - t), far(2 - t)];
}

function gridSampleInto(g: GridSampleGeometry, x: ArrayLike<number>, grid: ArrayLike<number>, y: FloatArray) {
  const { h, w, ho, wo } = g;
  const bounds = (d: number) => (g.align ? [0, d - 1] : [-0.5, d - 0.5]) as [number, number];
  const [bx, by] = [bounds(w), bounds(h)];
  const denorm = (v: number, d: number) => (g.align ? ((v + 1) / 2) * (d - 1) : ((v + 1) * d - 1) / 2);
  const fix = (v: number, d: number, b: [number, number]) => {
    if (v >= b[0] && v <= b[1]) return v;
    if (g.padding === 1) return Math.min(Math.max(v, 0), d - 1);
    return g.padding === 2 ? reflect(v, b[0], b[1]) : v;
  };
  /** Pixel index i along an axis of d through the padding mode; −1 for a zero pixel. */
  const index = (i: number, d: number, b: [number, number]) => {
    if (i >= 0 && i < d) return i;
    if (g.padding === 0) return -1;
    if (g.padding === 1) return Math.min(Math.max(i, 0), d - 1);
    return Math.trunc(reflect(i, b[0], b[1]));
  };
  const taps = g.mode === 0 ? 1 : g.mode === 1 ? 2 : 4;
  const rows = new Array<number>(taps);
  const cols = new Array<number>(taps);
  for (let n = 0; n < g.n; n++)
    for (let oy = 0; oy < ho; oy++)
      for (let ox = 0; ox < wo; ox++) {
        const at = ((n * ho + oy) * wo + ox) * 2;
        let cx = denorm(grid[at]!, w);
        let cy = denorm(grid[at + 1]!, h);
        if (g.mode === 0) [cx, cy] = [rint(cx), rint(cy)];
        cx = fix(cx, w, bx);
        cy = fix(cy, h, by);
        let wx = [1];
        let wy = [1];
        const [x0, y0] = g.mode === 0 ? [Math.trunc(cx), Math.trunc(cy)] : [Math.floor(cx), Math.floor(cy)];
        if (g.mode === 1)
          [wx, wy] = [
            [1 - (cx - x0), cx - x0],
            [1 - (cy - y0), cy - y0],
          ];
        if (g.mode === 2) [wx, wy] = [cubicCoeffs(cx - x0), cubicCoeffs(cy - y0)];
        const first = g.mode === 2 ? -1 : 0;
        for (let k = 0; k < taps; k++) {
          cols[k] = index(x0 + first + k, w, bx);
          rows[k] = index(y0 + first + k, h, by);
        }
        for (let c = 0; c < g.c; c++) {
          const plane = (n * g.c + c) * h * w;
          let v = 0;
          for (let i = 0; i < taps; i++) {
            let acc = 0;
            for (let j = 0; j < taps; j++)
              if (rows[i]! >= 0 && cols[j]! >= 0) acc += wx[j]! * x[plane + rows[i]! * w + cols[j]!]!;
            v += wy[i]! * acc;
          }
          y[((n * g.c + c) * ho + oy) * wo + ox] = v;
        }
      }
}

export const onnxGridSampleReference: ReferenceFn = (args, scalars) => {
  const g = gridSampleGeometry(args.x!.desc, args.grid!.desc, scalars);
  const y = new Float64Array(g.n * g.c * g.ho * g.wo);
  gridSampleInto(g, args.x!.values, args.grid!.values, y);
  return { y };
};

export const onnxGridSampleCpu: CpuKernel = (args, scalars) => {
  const [x, grid, y] = args as [CpuArg, CpuArg, CpuArg];
  const g = gridSampleGeometry(x.desc, grid.desc, scalars);
  const yf = isHalf(y.desc.dtype) ? new Float32Array(y.data.length) : (y.data as FloatArray);
  gridSampleInto(g, floatCopyOf(x), floatCopyOf(grid), yf);
  storeFloat(y, yf);
};

/** Coordinates and weights in double (as the reference), the sums in the compute type. */
export const onnxGridSampleCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_grid_sample',
  source: `${CUDA_INDEX}
#define TAPS (MODE == 0 ? 1 : (MODE == 1 ? 2 : 4))
static __device__ double reflect(double v, double lo, double hi) {
  const double range = hi - lo;
  if (v < lo) {
    const double dx = lo - v, k = trunc(dx / range), r = dx - k * range;
    return fmod(k, 2.0) == 0 ? lo + r : hi - r;
  }
  if (v > hi) {
    const double dx = v - hi, k = trunc(dx / range), r = dx - k * range;
    return fmod(k, 2.0) == 0 ? hi - r : lo + r;
  }
  return v;
}
static __device__ double fix_coord(double v, long long d, double lo, double hi) {
  if (v >= lo && v <= hi) return v;
#if PADDING == 1
  return v < 0 ? 0.0 : (v > d - 1 ? (double)(d - 1) : v);
#elif PADDING == 2
  return reflect(v, lo, hi);
#else
  return v;
#endif
}
/* Pixel index through the padding mode; -1 reads zero. */
static __device__ long long pix(long long i, long long d, double lo, double hi) {
  if (i >= 0 && i < d) return i;
#if PADDING == 0
  return -1;
#elif PADDING == 1
  return i < 0 ? 0 : d - 1;
#else
  return (long long)trunc(reflect((double)i, lo, hi));
#endif
}
static __device__ void coeffs(double t, double* w) {
#if MODE == 1
  w[0] = 1 - t; w[1] = t;
#elif MODE == 2
  const double A = -0.75, a = t + 1, b = 1 - t, c = 2 - t;
  w[0] = ((A * a - 5 * A) * a + 8 * A) * a - 4 * A;
  w[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
  w[2] = ((A + 2) * b - (A + 3)) * b * b + 1;
  w[3] = ((A * c - 5 * A) * c + 8 * A) * c - 4 * A;
#else
  w[0] = 1;
#endif
}
extern "C" __global__ void tdm_onnx_grid_sample(const X_t* __restrict__ x, const X_t* __restrict__ grid,
    X_t* __restrict__ y, long long n, long long C, long long H, long long W, long long HO, long long WO) {
  ${GRID_STRIDE} {
    tdm_idx t_ = (tdm_idx)i;
    const long long ox = t_ % (tdm_idx)WO; t_ /= (tdm_idx)WO;
    const long long oy = t_ % (tdm_idx)HO; t_ /= (tdm_idx)HO;
    const long long plane = t_, b = t_ / (tdm_idx)C;
    const long long g = ((b * HO + oy) * WO + ox) * 2;
    const double gx = (double)ldX(grid, g), gy = (double)ldX(grid, g + 1);
#if ALIGN
    const double lx = 0, hx = W - 1, ly = 0, hy = H - 1;
    double cx = (gx + 1) / 2 * (W - 1), cy = (gy + 1) / 2 * (H - 1);
#else
    const double lx = -0.5, hx = W - 0.5, ly = -0.5, hy = H - 0.5;
    double cx = ((gx + 1) * W - 1) / 2, cy = ((gy + 1) * H - 1) / 2;
#endif
#if MODE == 0
    cx = rint(cx); cy = rint(cy);
#endif
    cx = fix_coord(cx, W, lx, hx);
    cy = fix_coord(cy, H, ly, hy);
#if MODE == 0
    const long long x0 = (long long)trunc(cx), y0 = (long long)trunc(cy), first = 0;
#else
    const long long x0 = (long long)floor(cx), y0 = (long long)floor(cy), first = MODE == 2 ? -1 : 0;
#endif
    double wx[TAPS], wy[TAPS];
    coeffs(cx - x0, wx);
    coeffs(cy - y0, wy);
    long long cols[TAPS], rows[TAPS];
    for (int k = 0; k < TAPS; k++) {
      cols[k] = pix(x0 + first + k, W, lx, hx);
      rows[k] = pix(y0 + first + k, H, ly, hy);
    }
    const X_t* xp = x + plane * H * W;
    X_c v = 0;
    for (int a = 0; a < TAPS; a++) {
      X_c acc = 0;
      for (int k = 0; k < TAPS; k++)
        if (rows[a] >= 0 && cols[k] >= 0) acc += (X_c)wx[k] * ldX(xp, rows[a] * W + cols[k]);
      v += (X_c)wy[a] * acc;
    }
    stX(y, i, v);
  }
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  defines: (args, scalars) => {
    const g = gridSampleGeometry(args[0]!.desc, args[1]!.desc, scalars);
    return {
      MODE: g.mode,
      PADDING: g.padding,
      ALIGN: g.align ? 1 : 0,
      IDX32: idx32(g.n * g.c * g.ho * g.wo),
    };
  },
  grid: (args) => elementwiseGrid(numel(args[2]!.desc.shape)),
  block: () => BLOCK_DIM,
  params: (args, scalars): CudaParam[] => {
    const g = gridSampleGeometry(args[0]!.desc, args[1]!.desc, scalars);
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      { kind: 'ptr', arg: 2 },
      ...i64Params([g.n * g.c * g.ho * g.wo, g.c, g.h, g.w, g.ho, g.wo]),
    ];
  },
};
