/**
 * onnx_pool (MaxPool / AveragePool: pads, dilations, ceil_mode, count_include_pad) and
 * onnx_global_pool (GlobalAveragePool / GlobalMaxPool): definitions, float64 references, CPU and CUDA.
 */
import { numel } from '../../core/shape.js';
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import type { CudaParam, CudaProgram } from '../../devices/cuda/kernel-api.js';
import type { Scalars, TensorDesc } from '../../devices/device.js';
import { type FloatArray, floatCopyOf, isHalf, storeFloat } from '../common/cpu-float.js';
import { BLOCK_DIM, GRID_STRIDE, elementwiseGrid } from '../common/cuda.js';
import type { ReferenceFn } from '../common/reference.js';
import { boolScalar, enumScalar } from '../common/scalars.js';
import { FLOAT_DTYPES, i64Params, onnxDef, requireDTypes, streamCost } from './common.js';
import {
  fixedIntList,
  poolOutputShape,
  requireRank,
  requireShape,
  type Window2d,
  window2d,
} from './shapes.js';

export const POOL_OPS = ['max', 'avg'] as const;
type PoolOp = (typeof POOL_OPS)[number];

interface PoolGeometry extends Window2d {
  readonly op: PoolOp;
  readonly countIncludePad: boolean;
  readonly n: number;
  readonly c: number;
  readonly h: number;
  readonly w: number;
  readonly ho: number;
  readonly wo: number;
}

export function poolGeometry(x: TensorDesc, y: TensorDesc, scalars: Scalars): PoolGeometry {
  const op = enumScalar('onnx_pool', scalars, 'op', POOL_OPS);
  requireRank('onnx_pool', 'x', x.shape, 4, 4);
  const [kh, kw] = fixedIntList('onnx_pool', scalars, 'kernel', 2, 1, []) as [number, number];
  const win = window2d('onnx_pool', scalars, kh, kw);
  const out = poolOutputShape('onnx_pool', x.shape, win, boolScalar('onnx_pool', scalars, 'ceilMode', false));
  requireShape('onnx_pool', 'y', y.shape, out);
  const [n, c, h, w] = x.shape as [number, number, number, number];
  const countIncludePad = boolScalar('onnx_pool', scalars, 'countIncludePad', false);
  return { ...win, op, countIncludePad, n, c, h, w, ho: out[2]!, wo: out[3]! };
}

export const onnxPoolDef = onnxDef(
  'onnx_pool',
  [
    ['x', 'r'],
    ['y', 'w'],
  ],
  ['op', 'kernel', 'strides', 'pads', 'dilations', 'ceilMode', 'countIncludePad'],
  (args, scalars) => {
    requireDTypes('onnx_pool', args, ['x', 'y'], FLOAT_DTYPES);
    poolGeometry(args.x!, args.y!, scalars);
  },
  (args, scalars) => {
    const g = poolGeometry(args.x!, args.y!, scalars);
    return streamCost(args, g.kh * g.kw);
  },
);

/** One output of the pool over `x` (any array of values): ONNX Runtime's window and divisor rules. */
function poolAt(g: PoolGeometry, x: ArrayLike<number>, plane: number, oh: number, ow: number): number {
  const h0 = oh * g.sh - g.pads[0];
  const w0 = ow * g.sw - g.pads[1];
  let acc = g.op === 'max' ? -Infinity : 0;
  let inside = 0;
  let padded = 0;
  for (let r = 0; r < g.kh; r++) {
    const ih = h0 + r * g.dh;
    const rowPadded = ih < g.h + g.pads[2];
    for (let q = 0; q < g.kw; q++) {
      const iw = w0 + q * g.dw;
      if (rowPadded && iw < g.w + g.pads[3]) padded++;
      if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) continue;
      const v = x[plane + ih * g.w + iw]!;
      inside++;
      if (g.op === 'avg') acc += v;
      else if (v > acc || v !== v) acc = v !== v || acc !== acc ? NaN : v;
    }
  }
  if (g.op === 'max') return acc;
  return acc / (g.countIncludePad ? padded : inside);
}

export const onnxPoolReference: ReferenceFn = (args, scalars) => {
  const g = poolGeometry(args.x!.desc, args.y!.desc, scalars);
  const y = new Float64Array(numel(args.y!.desc.shape));
  let at = 0;
  for (let p = 0; p < g.n * g.c; p++)
    for (let oh = 0; oh < g.ho; oh++)
      for (let ow = 0; ow < g.wo; ow++) y[at++] = poolAt(g, args.x!.values, p * g.h * g.w, oh, ow);
  return { y };
};

export const onnxPoolCpu: CpuKernel = (args, scalars) => {
  const [x, y] = args as [CpuArg, CpuArg];
  const g = poolGeometry(x.desc, y.desc, scalars);
  const xf = floatCopyOf(x);
  const yf = isHalf(y.desc.dtype) ? new Float32Array(y.data.length) : (y.data as FloatArray);
  let at = 0;
  for (let p = 0; p < g.n * g.c; p++)
    for (let oh = 0; oh < g.ho; oh++)
      for (let ow = 0; ow < g.wo; ow++) yf[at++] = poolAt(g, xf, p * g.h * g.w, oh, ow);
  storeFloat(y, yf);
};

export const onnxPoolCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_pool',
  source: `
extern "C" __global__ void tdm_onnx_pool(const X_t* __restrict__ x, X_t* __restrict__ y, long long n,
    long long H, long long W, long long HO, long long WO, long long KH, long long KW, long long SH, long long SW,
    long long DH, long long DW, long long PT, long long PL, long long PB, long long PR) {
  ${GRID_STRIDE} {
    long long ow = i % WO, oh = (i / WO) % HO, plane = i / (WO * HO);
    long long h0 = oh * SH - PT, w0 = ow * SW - PL;
    const X_t* xp = x + plane * H * W;
#if IS_MAX
    X_c acc = -(X_c)(1.0 / 0.0);
#else
    X_c acc = (X_c)0;
#endif
    long long inside = 0, padded = 0;
    for (long long r = 0; r < KH; ++r) {
      long long ih = h0 + r * DH;
      for (long long q = 0; q < KW; ++q) {
        long long iw = w0 + q * DW;
        if (ih < H + PB && iw < W + PR) padded++;
        if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
        X_c v = ldX(xp, ih * W + iw);
        inside++;
#if IS_MAX
        if (v > acc || v != v) acc = (v != v || acc != acc) ? v + acc : v;
#else
        acc += v;
#endif
      }
    }
#if IS_MAX
    stX(y, i, acc);
#else
    stX(y, i, acc / (X_c)(INCLUDE_PAD ? padded : inside));
#endif
  }
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  defines: (args, scalars) => {
    const g = poolGeometry(args[0]!.desc, args[1]!.desc, scalars);
    return { IS_MAX: g.op === 'max' ? 1 : 0, INCLUDE_PAD: g.countIncludePad ? 1 : 0 };
  },
  grid: (args) => elementwiseGrid(numel(args[1]!.desc.shape)),
  block: () => BLOCK_DIM,
  params: (args, scalars) => {
    const g = poolGeometry(args[0]!.desc, args[1]!.desc, scalars);
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      { kind: 'i64', value: numel(args[1]!.desc.shape) },
      ...i64Params([g.h, g.w, g.ho, g.wo, g.kh, g.kw, g.sh, g.sw, g.dh, g.dw, ...g.pads]),
    ];
  },
};

/** x [N,C,…spatial] → y [N,C,1,…]: the plane count and the plane size. */
export function globalGeometry(x: TensorDesc, y: TensorDesc): { planes: number; size: number } {
  requireRank('onnx_global_pool', 'x', x.shape, 3);
  requireShape('onnx_global_pool', 'y', y.shape, [
    x.shape[0]!,
    x.shape[1]!,
    ...x.shape.slice(2).map(() => 1),
  ]);
  return { planes: x.shape[0]! * x.shape[1]!, size: numel(x.shape.slice(2)) };
}

export const onnxGlobalPoolDef = onnxDef(
  'onnx_global_pool',
  [
    ['x', 'r'],
    ['y', 'w'],
  ],
  ['op'],
  (args, scalars) => {
    enumScalar('onnx_global_pool', scalars, 'op', POOL_OPS);
    requireDTypes('onnx_global_pool', args, ['x', 'y'], FLOAT_DTYPES);
    globalGeometry(args.x!, args.y!);
  },
  (args) => streamCost(args, numel(args.x!.shape) / Math.max(1, numel(args.y!.shape))),
);

function globalPool(
  op: PoolOp,
  x: ArrayLike<number>,
  y: FloatArray | Float64Array,
  planes: number,
  size: number,
) {
  for (let p = 0; p < planes; p++) {
    let acc = op === 'max' ? -Infinity : 0;
    for (let i = p * size; i < (p + 1) * size; i++) {
      const v = x[i]!;
      if (op === 'avg') acc += v;
      else if (v > acc || v !== v) acc = v !== v || acc !== acc ? NaN : v;
    }
    y[p] = op === 'avg' ? acc / size : acc;
  }
}

export const onnxGlobalPoolReference: ReferenceFn = (args, scalars) => {
  const { planes, size } = globalGeometry(args.x!.desc, args.y!.desc);
  const y = new Float64Array(planes);
  globalPool(enumScalar('onnx_global_pool', scalars, 'op', POOL_OPS), args.x!.values, y, planes, size);
  return { y };
};

export const onnxGlobalPoolCpu: CpuKernel = (args, scalars) => {
  const [x, y] = args as [CpuArg, CpuArg];
  const { planes, size } = globalGeometry(x.desc, y.desc);
  // Sums in JS doubles: a plane may hold a whole 640x640 image.
  const out = new Float64Array(planes);
  globalPool(enumScalar('onnx_global_pool', scalars, 'op', POOL_OPS), floatCopyOf(x), out, planes, size);
  const yf = isHalf(y.desc.dtype) ? new Float32Array(planes) : (y.data as FloatArray);
  yf.set(out);
  storeFloat(y, yf);
};

/** One block of 256 threads per plane: strided partial sums (or maxima), then a tree in shared memory. */
export const onnxGlobalPoolCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_global_pool',
  source: `
extern "C" __global__ void tdm_onnx_global_pool(const X_t* __restrict__ x, X_t* __restrict__ y, long long size) {
  __shared__ X_c part[256];
  const X_t* xp = x + blockIdx.x * size;
#if IS_MAX
  X_c acc = -(X_c)(1.0 / 0.0);
  for (long long i = threadIdx.x; i < size; i += blockDim.x) { X_c v = ldX(xp, i); if (v > acc || v != v) acc = (v != v || acc != acc) ? v + acc : v; }
#else
  X_c acc = (X_c)0;
  for (long long i = threadIdx.x; i < size; i += blockDim.x) acc += ldX(xp, i);
#endif
  part[threadIdx.x] = acc;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      X_c a = part[threadIdx.x], b = part[threadIdx.x + s];
#if IS_MAX
      part[threadIdx.x] = (a != a || b != b) ? a + b : (a > b ? a : b);
#else
      part[threadIdx.x] = a + b;
#endif
    }
    __syncthreads();
  }
#if IS_MAX
  if (threadIdx.x == 0) stX(y, blockIdx.x, part[0]);
#else
  if (threadIdx.x == 0) stX(y, blockIdx.x, part[0] / (X_c)size);
#endif
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  defines: (_args, scalars) => ({
    IS_MAX: enumScalar('onnx_global_pool', scalars, 'op', POOL_OPS) === 'max' ? 1 : 0,
  }),
  grid: (args) => [globalGeometry(args[0]!.desc, args[1]!.desc).planes, 1, 1],
  block: () => BLOCK_DIM,
  params: (args): CudaParam[] => [
    { kind: 'ptr', arg: 0 },
    { kind: 'ptr', arg: 1 },
    { kind: 'i64', value: globalGeometry(args[0]!.desc, args[1]!.desc).size },
  ],
};
