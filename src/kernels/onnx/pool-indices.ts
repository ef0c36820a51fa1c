/**
 * onnx_maxpool_indices: MaxPool with its Indices output (2-d windows as onnx_pool: pads, strides,
 * dilations, ceil mode): y the window maxima, indices (i32) the flat position of each maximum in x,
 * ((n·C + c)·H + h)·W + w, or ((n·C + c)·H·W + w·H + h) with storageOrder 1 (column-major, ONNX's
 * storage_order). The first maximum in the window's row-major scan wins a tie; a NaN wins its window
 * (the first NaN), as in onnx_pool. Definition, float64 reference, CPU and CUDA.
 */
import { numel } from '../../core/shape.js';
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import type { CudaParam, CudaProgram } from '../../devices/cuda/kernel-api.js';
import type { Scalars, TensorDesc } from '../../devices/device.js';
import { type FloatArray, floatCopyOf, isHalf, storeFloat } from '../common/cpu-float.js';
import { BLOCK_DIM, GRID_STRIDE, elementwiseGrid } from '../common/cuda.js';
import type { ReferenceFn } from '../common/reference.js';
import { boolScalar, intScalar } from '../common/scalars.js';
import { FLOAT_DTYPES, i64Params, onnxDef, requireDTypes, streamCost } from './common.js';
import { fixedIntList, poolOutputShape, requireRank, requireShape, window2d } from './shapes.js';

const OP = 'onnx_maxpool_indices';

export function maxpoolIndicesGeometry(x: TensorDesc, y: TensorDesc, indices: TensorDesc, scalars: Scalars) {
  requireRank(OP, 'x', x.shape, 4, 4);
  const [kh, kw] = fixedIntList(OP, scalars, 'kernel', 2, 1, []) as [number, number];
  const win = window2d(OP, scalars, kh, kw);
  const out = poolOutputShape(OP, x.shape, win, boolScalar(OP, scalars, 'ceilMode', false));
  requireShape(OP, 'y', y.shape, out);
  requireShape(OP, 'indices', indices.shape, out);
  const [n, c, h, w] = x.shape as [number, number, number, number];
  const columnMajor = intScalar(OP, scalars, 'storageOrder', 0) === 1;
  return { ...win, columnMajor, planes: n * c, h, w, ho: out[2]!, wo: out[3]! };
}

type Geometry = ReturnType<typeof maxpoolIndicesGeometry>;

export const onnxMaxpoolIndicesDef = onnxDef(
  OP,
  [
    ['x', 'r'],
    ['y', 'w'],
    ['indices', 'w'],
  ],
  ['kernel', 'strides', 'pads', 'dilations', 'ceilMode', 'storageOrder'],
  (args, scalars) => {
    requireDTypes(OP, args, ['x', 'y'], FLOAT_DTYPES);
    requireDTypes(OP, args, ['indices'], ['i32']);
    maxpoolIndicesGeometry(args.x!, args.y!, args.indices!, scalars);
  },
  (args, scalars) => {
    const g = maxpoolIndicesGeometry(args.x!, args.y!, args.indices!, scalars);
    return streamCost(args, g.kh * g.kw);
  },
);

function maxpoolInto(g: Geometry, x: ArrayLike<number>, y: FloatArray, idx: { [i: number]: number }): void {
  let o = 0;
  for (let p = 0; p < g.planes; p++)
    for (let oh = 0; oh < g.ho; oh++)
      for (let ow = 0; ow < g.wo; ow++, o++) {
        let [best, at] = [-Infinity, -1];
        for (let r = 0; r < g.kh; r++) {
          const ih = oh * g.sh - g.pads[0] + r * g.dh;
          if (ih < 0 || ih >= g.h) continue;
          for (let q = 0; q < g.kw; q++) {
            const iw = ow * g.sw - g.pads[1] + q * g.dw;
            if (iw < 0 || iw >= g.w) continue;
            const v = x[(p * g.h + ih) * g.w + iw]!;
            if (best !== best) continue;
            if (v !== v || v > best || at < 0) {
              best = v;
              at = g.columnMajor ? p * g.h * g.w + iw * g.h + ih : (p * g.h + ih) * g.w + iw;
            }
          }
        }
        y[o] = best;
        idx[o] = Math.max(at, 0);
      }
}

export const onnxMaxpoolIndicesReference: ReferenceFn = (args, scalars) => {
  const g = maxpoolIndicesGeometry(args.x!.desc, args.y!.desc, args.indices!.desc, scalars);
  const n = g.planes * g.ho * g.wo;
  const [y, indices] = [new Float64Array(n), new Float64Array(n)];
  maxpoolInto(g, args.x!.values, y, indices);
  return { y, indices };
};

export const onnxMaxpoolIndicesCpu: CpuKernel = (args, scalars) => {
  const [x, y, indices] = args as [CpuArg, CpuArg, CpuArg];
  const g = maxpoolIndicesGeometry(x.desc, y.desc, indices.desc, scalars);
  const yf = isHalf(y.desc.dtype) ? new Float32Array(y.data.length) : (y.data as FloatArray);
  maxpoolInto(g, floatCopyOf(x), yf, indices.data);
  storeFloat(y, yf);
};

export const onnxMaxpoolIndicesCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_maxpool_indices',
  source: `
extern "C" __global__ void tdm_onnx_maxpool_indices(const X_t* __restrict__ x, X_t* __restrict__ y,
    int* __restrict__ indices, long long n, long long H, long long W, long long HO, long long WO,
    long long KH, long long KW, long long SH, long long SW, long long PT, long long PL, long long DH,
    long long DW) {
  ${GRID_STRIDE} {
    const long long ow = i % WO, oh = (i / WO) % HO, p = i / (WO * HO);
    X_c best = (X_c)0;
    long long at = -1;
    for (long long r = 0; r < KH; r++) {
      const long long ih = oh * SH - PT + r * DH;
      if (ih < 0 || ih >= H) continue;
      for (long long q = 0; q < KW; q++) {
        const long long iw = ow * SW - PL + q * DW;
        if (iw < 0 || iw >= W) continue;
        const X_c v = ldX(x, (p * H + ih) * W + iw);
        if (at >= 0 && best != best) continue;
        if (at < 0 || v != v || v > best) {
          best = v;
          at = COLUMN_MAJOR ? p * H * W + iw * H + ih : (p * H + ih) * W + iw;
        }
      }
    }
    stX(y, i, at < 0 ? (X_c)(-__longlong_as_double(0x7ff0000000000000LL)) : best); // no math.h in NVRTC
    indices[i] = (int)(at < 0 ? 0 : at);
  }
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  defines: (args, scalars) => ({
    COLUMN_MAJOR: maxpoolIndicesGeometry(args[0]!.desc, args[1]!.desc, args[2]!.desc, scalars).columnMajor
      ? 1
      : 0,
  }),
  grid: (args) => elementwiseGrid(numel(args[1]!.desc.shape)),
  block: () => BLOCK_DIM,
  params: (args, scalars): CudaParam[] => {
    const g = maxpoolIndicesGeometry(args[0]!.desc, args[1]!.desc, args[2]!.desc, scalars);
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      { kind: 'ptr', arg: 2 },
      ...i64Params([
        g.planes * g.ho * g.wo,
        g.h,
        g.w,
        g.ho,
        g.wo,
        g.kh,
        g.kw,
        g.sh,
        g.sw,
        g.pads[0],
        g.pads[1],
        g.dh,
        g.dw,
      ]),
    ];
  },
};
