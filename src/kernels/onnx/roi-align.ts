/**
 * onnx_roi_align: ONNX RoiAlign on x [N,C,H,W] for rois [R,4] (x1, y1, x2, y2) of images
 * batchIndices [R] (i32) into y [R,C,oh,ow]. Definition, float64 reference, CPU and CUDA, written from
 * ONNX's definition (ONNX Runtime's algorithm):
 *   - the roi scaled by spatialScale, shifted by −½ with halfPixel (half_pixel), otherwise its sides
 *     at least 1 (output_half_pixel, the legacy mode);
 *   - each output bin averages (or, mode max, takes the largest) samplingRatio² bilinear samples at
 *     the centres of a regular grid (sampling ratio 0: ⌈roi side / output side⌉ per axis);
 *   - a sample more than one pixel outside the image reads 0; otherwise its coordinates are clamped
 *     at 0 and at the last pixel. Max mode takes, per sample, the largest of its four weighted pixels
 *     (ONNX Runtime's rule, which ONNX's reference follows).
 */
import { TandemError } from '../../core/errors.js';
import { numel } from '../../core/shape.js';
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import type { CudaParam, CudaProgram } from '../../devices/cuda/kernel-api.js';
import type { Scalars, TensorDesc } from '../../devices/device.js';
import { type FloatArray, floatCopyOf, isHalf, storeFloat } from '../common/cpu-float.js';
import { BLOCK_DIM, GRID_STRIDE, elementwiseGrid } from '../common/cuda.js';
import type { ReferenceFn } from '../common/reference.js';
import { enumScalar, intScalar, numberScalar } from '../common/scalars.js';
import { CUDA_INDEX, FLOAT_DTYPES, i64Params, idx32, onnxDef, requireDTypes, streamCost } from './common.js';
import { requireRank } from './shapes.js';

export function roiAlignGeometry(
  x: TensorDesc,
  rois: TensorDesc,
  idx: TensorDesc,
  y: TensorDesc,
  scalars: Scalars,
) {
  const op = 'onnx_roi_align';
  for (const [name, d, r] of [
    ['x', x, 4],
    ['rois', rois, 2],
    ['batchIndices', idx, 1],
    ['y', y, 4],
  ] as const)
    requireRank(op, name, d.shape, r, r);
  const [n, c, h, w] = x.shape as [number, number, number, number];
  const r = rois.shape[0]!;
  if (rois.shape[1] !== 4 || idx.shape[0] !== r || y.shape[0] !== r || y.shape[1] !== c || h < 1 || w < 1)
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `${op}: rois [R,4], batchIndices [R] and y [R,${c},oh,ow] must agree for x [${x.shape.join(',')}]`,
      { op },
    );
  return {
    max: enumScalar(op, scalars, 'mode', ['avg', 'max'] as const, 'avg') === 'max',
    ratio: intScalar(op, scalars, 'samplingRatio', 0),
    scale: numberScalar(op, scalars, 'spatialScale', 1),
    halfPixel: scalars['halfPixel'] !== false,
    n,
    c,
    h,
    w,
    r,
    oh: y.shape[2]!,
    ow: y.shape[3]!,
  };
}

type Geometry = ReturnType<typeof roiAlignGeometry>;

export const onnxRoiAlignDef = onnxDef(
  'onnx_roi_align',
  [
    ['x', 'r'],
    ['rois', 'r'],
    ['batchIndices', 'r'],
    ['y', 'w'],
  ],
  ['mode', 'samplingRatio', 'spatialScale', 'halfPixel'],
  (args, scalars) => {
    requireDTypes('onnx_roi_align', args, ['x', 'rois', 'y'], FLOAT_DTYPES);
    requireDTypes('onnx_roi_align', args, ['batchIndices'], ['i32']);
    roiAlignGeometry(args.x!, args.rois!, args.batchIndices!, args.y!, scalars);
  },
  (args) => streamCost(args, 64),
);

function roiAlignInto(
  g: Geometry,
  x: ArrayLike<number>,
  rois: ArrayLike<number>,
  idx: ArrayLike<number>,
  y: FloatArray,
) {
  const off = g.halfPixel ? 0.5 : 0;
  for (let r = 0; r < g.r; r++) {
    const b = idx[r]!;
    const [x1, y1, x2, y2] = [0, 1, 2, 3].map((k) => rois[r * 4 + k]! * g.scale - off) as [
      number,
      number,
      number,
      number,
    ];
    let [rw, rh] = [x2 - x1, y2 - y1];
    if (!g.halfPixel) [rw, rh] = [Math.max(rw, 1), Math.max(rh, 1)];
    const [bh, bw] = [rh / g.oh, rw / g.ow];
    const gh = g.ratio > 0 ? g.ratio : Math.ceil(rh / g.oh);
    const gw = g.ratio > 0 ? g.ratio : Math.ceil(rw / g.ow);
    const count = Math.max(gh * gw, 1);
    for (let c = 0; c < g.c; c++) {
      const plane = (b * g.c + c) * g.h * g.w;
      const at = (yy: number, xx: number) => x[plane + yy * g.w + xx]!;
      for (let ph = 0; ph < g.oh; ph++)
        for (let pw = 0; pw < g.ow; pw++) {
          let acc = g.max ? -Infinity : 0;
          for (let iy = 0; iy < gh; iy++)
            for (let ix = 0; ix < gw; ix++) {
              let sy = y1 + ph * bh + ((iy + 0.5) * bh) / gh;
              let sx = x1 + pw * bw + ((ix + 0.5) * bw) / gw;
              let v = 0;
              if (!(sy < -1 || sy > g.h || sx < -1 || sx > g.w)) {
                [sy, sx] = [Math.max(sy, 0), Math.max(sx, 0)];
                let [y0, x0] = [Math.floor(sy), Math.floor(sx)];
                let [yh, xh] = [y0 + 1, x0 + 1];
                if (y0 >= g.h - 1) [y0, yh, sy] = [g.h - 1, g.h - 1, g.h - 1];
                if (x0 >= g.w - 1) [x0, xh, sx] = [g.w - 1, g.w - 1, g.w - 1];
                const [ly, lx] = [sy - y0, sx - x0];
                const ws = [(1 - ly) * (1 - lx), (1 - ly) * lx, ly * (1 - lx), ly * lx];
                const ps = [at(y0, x0), at(y0, xh), at(yh, x0), at(yh, xh)];
                v = g.max
                  ? Math.max(...ws.map((wt, k) => wt * ps[k]!))
                  : ws.reduce((s, wt, k) => s + wt * ps[k]!, 0);
              }
              acc = g.max ? Math.max(acc, v) : acc + v;
            }
          y[((r * g.c + c) * g.oh + ph) * g.ow + pw] = g.max ? acc : acc / count;
        }
    }
  }
}

export const onnxRoiAlignReference: ReferenceFn = (args, scalars) => {
  const g = roiAlignGeometry(args.x!.desc, args.rois!.desc, args.batchIndices!.desc, args.y!.desc, scalars);
  const y = new Float64Array(g.r * g.c * g.oh * g.ow);
  roiAlignInto(g, args.x!.values, args.rois!.values, args.batchIndices!.values, y);
  return { y };
};

export const onnxRoiAlignCpu: CpuKernel = (args, scalars) => {
  const [x, rois, idx, y] = args as [CpuArg, CpuArg, CpuArg, CpuArg];
  const g = roiAlignGeometry(x.desc, rois.desc, idx.desc, y.desc, scalars);
  const yf = isHalf(y.desc.dtype) ? new Float32Array(y.data.length) : (y.data as FloatArray);
  roiAlignInto(g, floatCopyOf(x), floatCopyOf(rois), idx.data, yf);
  storeFloat(y, yf);
};

/** One thread per output; coordinates and weights in double, as the reference. */
export const onnxRoiAlignCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_roi_align',
  source: `${CUDA_INDEX}
extern "C" __global__ void tdm_onnx_roi_align(const X_t* __restrict__ x, const X_t* __restrict__ rois,
    const int* __restrict__ bidx, X_t* __restrict__ y, long long n, long long C, long long H, long long W,
    long long OH, long long OW, long long ratio, double scale) {
  ${GRID_STRIDE} {
    tdm_idx t_ = (tdm_idx)i;
    const long long pw = t_ % (tdm_idx)OW; t_ /= (tdm_idx)OW;
    const long long ph = t_ % (tdm_idx)OH; t_ /= (tdm_idx)OH;
    const long long c = t_ % (tdm_idx)C, r = t_ / (tdm_idx)C;
    const double off = HALF_PIXEL ? 0.5 : 0.0;
    const double x1 = (double)ldX(rois, r * 4) * scale - off, y1 = (double)ldX(rois, r * 4 + 1) * scale - off;
    const double x2 = (double)ldX(rois, r * 4 + 2) * scale - off, y2 = (double)ldX(rois, r * 4 + 3) * scale - off;
    double rw = x2 - x1, rh = y2 - y1;
#if !HALF_PIXEL
    rw = rw > 1 ? rw : 1; rh = rh > 1 ? rh : 1;
#endif
    const double bh = rh / OH, bw = rw / OW;
    const long long gh = ratio > 0 ? ratio : (long long)ceil(rh / OH), gw = ratio > 0 ? ratio : (long long)ceil(rw / OW);
    const double count = gh * gw > 1 ? (double)(gh * gw) : 1.0;
    const X_t* xp = x + ((long long)bidx[r] * C + c) * H * W;
    // NVRTC has no math.h: -infinity from its bits.
    double acc = MAX_MODE ? -__longlong_as_double(0x7ff0000000000000LL) : 0.0;
    for (long long iy = 0; iy < gh; iy++)
      for (long long ix = 0; ix < gw; ix++) {
        double sy = y1 + ph * bh + (iy + 0.5) * bh / gh, sx = x1 + pw * bw + (ix + 0.5) * bw / gw, v = 0;
        if (!(sy < -1 || sy > H || sx < -1 || sx > W)) {
          sy = sy > 0 ? sy : 0; sx = sx > 0 ? sx : 0;
          long long y0 = (long long)floor(sy), x0 = (long long)floor(sx), yh = y0 + 1, xh = x0 + 1;
          if (y0 >= H - 1) { y0 = yh = H - 1; sy = (double)(H - 1); }
          if (x0 >= W - 1) { x0 = xh = W - 1; sx = (double)(W - 1); }
          const double ly = sy - y0, lx = sx - x0;
          const double w1 = (1 - ly) * (1 - lx), w2 = (1 - ly) * lx, w3 = ly * (1 - lx), w4 = ly * lx;
          const double p1 = (double)ldX(xp, y0 * W + x0), p2 = (double)ldX(xp, y0 * W + xh);
          const double p3 = (double)ldX(xp, yh * W + x0), p4 = (double)ldX(xp, yh * W + xh);
#if MAX_MODE
          v = fmax(fmax(w1 * p1, w2 * p2), fmax(w3 * p3, w4 * p4));
#else
          v = w1 * p1 + w2 * p2 + w3 * p3 + w4 * p4;
#endif
        }
#if MAX_MODE
        acc = fmax(acc, v);
#else
        acc += v;
#endif
      }
    stX(y, i, (X_c)(MAX_MODE ? acc : acc / count));
  }
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  defines: (args, scalars) => {
    const g = roiAlignGeometry(args[0]!.desc, args[1]!.desc, args[2]!.desc, args[3]!.desc, scalars);
    return {
      MAX_MODE: g.max ? 1 : 0,
      HALF_PIXEL: g.halfPixel ? 1 : 0,
      IDX32: idx32(g.r * g.c * g.oh * g.ow),
    };
  },
  grid: (args) => elementwiseGrid(numel(args[3]!.desc.shape)),
  block: () => BLOCK_DIM,
  params: (args, scalars): CudaParam[] => {
    const g = roiAlignGeometry(args[0]!.desc, args[1]!.desc, args[2]!.desc, args[3]!.desc, scalars);
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      { kind: 'ptr', arg: 2 },
      { kind: 'ptr', arg: 3 },
      ...i64Params([g.r * g.c * g.oh * g.ow, g.c, g.h, g.w, g.oh, g.ow, g.ratio]),
      { kind: 'f64', value: g.scale },
    ];
  },
};
