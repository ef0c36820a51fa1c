/**
 * onnx_reduce: ReduceSum/Mean/Max/Min/Prod/SumSquare/L2/LogSumExp over any set of axes. Definition,
 * float64 reference, CPU (sums in doubles) and CUDA (one block per output element, the reduced
 * elements split over its threads, so any axes work at full occupancy when outputs are few).
 */
import { TandemError } from '../../core/errors.js';
import { numel } from '../../core/shape.js';
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import type { CudaParam, CudaProgram } from '../../devices/cuda/kernel-api.js';
import type { Scalars, TensorDesc } from '../../devices/device.js';
import { type FloatArray, floatCopyOf, isHalf, storeFloat } from '../common/cpu-float.js';
import { BLOCK_DIM, MATH_OVERLOADS } from '../common/cuda.js';
import type { ReferenceFn } from '../common/reference.js';
import { boolScalar, enumScalar } from '../common/scalars.js';
import {
  CUDA_INDEX,
  FLOAT_DTYPES,
  i64Params,
  idx32,
  onnxDef,
  pad6,
  requireDTypes,
  streamCost,
} from './common.js';
import { contiguousStrides, reduceAxes, reduceOutputShape, requireRank } from './shapes.js';

export const REDUCE_OPS = ['sum', 'mean', 'max', 'min', 'prod', 'sum_square', 'l2', 'log_sum_exp'] as const;
type ReduceOp = (typeof REDUCE_OPS)[number];

export interface ReducePlan {
  readonly op: ReduceOp;
  /** Kept axes of x (in order) with their x strides: one output element per position. */
  readonly keptDims: number[];
  readonly keptStrides: number[];
  /** Reduced axes with their x strides. */
  readonly redDims: number[];
  readonly redStrides: number[];
  readonly outputs: number;
  readonly count: number;
}

export function reducePlan(x: TensorDesc, y: TensorDesc, scalars: Scalars): ReducePlan {
  const name = 'onnx_reduce';
  const op = enumScalar(name, scalars, 'op', REDUCE_OPS);
  requireRank(name, 'x', x.shape, 0);
  const axes = reduceAxes(name, x.shape.length, scalars) ?? [];
  const keepdims = boolScalar(name, scalars, 'keepdims', true);
  const want = reduceOutputShape(x.shape, reduceAxes(name, x.shape.length, scalars), keepdims);
  // Only the element count and order matter (a rank-0 result may come as [] or [1]).
  if (
    numel(y.shape) !== numel(want) ||
    (y.shape.length !== want.length && !(want.length === 0 && numel(y.shape) === 1))
  ) {
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `${name}: y is [${y.shape.join(',')}], expected [${want.join(',')}]`,
      { op: name },
    );
  }
  const xs = contiguousStrides(x.shape);
  const kept = x.shape.map((_, i) => i).filter((i) => !axes.includes(i));
  const plan = {
    op,
    keptDims: kept.map((i) => x.shape[i]!),
    keptStrides: kept.map((i) => xs[i]!),
    redDims: axes.map((i) => x.shape[i]!),
    redStrides: axes.map((i) => xs[i]!),
  };
  return { ...plan, outputs: numel(plan.keptDims), count: numel(plan.redDims) };
}

export const onnxReduceDef = onnxDef(
  'onnx_reduce',
  [
    ['x', 'r'],
    ['y', 'w'],
  ],
  ['op', 'axes', 'keepdims', 'noopWithEmptyAxes'],
  (args, scalars) => {
    boolScalar('onnx_reduce', scalars, 'noopWithEmptyAxes', false);
    requireDTypes('onnx_reduce', args, ['x', 'y'], FLOAT_DTYPES);
    reducePlan(args.x!, args.y!, scalars);
  },
  (args) => streamCost(args, numel(args.x!.shape) / Math.max(1, numel(args.y!.shape))),
);

/** Offsets of the elements of `dims` (strides `strides`) in row-major order. */
function offsets(dims: readonly number[], strides: readonly number[]): Float64Array {
  const n = numel(dims);
  const out = new Float64Array(n);
  const cs = contiguousStrides(dims);
  for (let i = 0; i < n; i++) {
    let off = 0;
    dims.forEach((d, k) => (off += (Math.floor(i / cs[k]!) % d) * strides[k]!));
    out[i] = off;
  }
  return out;
}

function reduceOne(op: ReduceOp, x: ArrayLike<number>, base: number, red: ArrayLike<number>): number {
  const n = red.length;
  if (op === 'max' || op === 'min' || op === 'log_sum_exp') {
    let m = op === 'min' ? Infinity : -Infinity;
    for (let i = 0; i < n; i++) {
      const v = x[base + red[i]!]!;
      if (v !== v) return NaN;
      if (op === 'min' ? v < m : v > m) m = v;
    }
    if (op !== 'log_sum_exp') return m;
    if (!Number.isFinite(m)) return m;
    let s = 0;
    for (let i = 0; i < n; i++) s += Math.exp(x[base + red[i]!]! - m);
    return m + Math.log(s);
  }
  let acc = op === 'prod' ? 1 : 0;
  for (let i = 0; i < n; i++) {
    const v = x[base + red[i]!]!;
    if (op === 'prod') acc *= v;
    else acc += op === 'sum_square' || op === 'l2' ? v * v : v;
  }
  if (op === 'mean') return acc / n;
  if (op === 'l2') return Math.sqrt(acc);
  return acc;
}

function reduceInto(p: ReducePlan, x: ArrayLike<number>, y: FloatArray): void {
  const kept = offsets(p.keptDims, p.keptStrides);
  const red = offsets(p.redDims, p.redStrides);
  for (let o = 0; o < p.outputs; o++) y[o] = reduceOne(p.op, x, kept[o]!, red);
}

export const onnxReduceReference: ReferenceFn = (args, scalars) => {
  const p = reducePlan(args.x!.desc, args.y!.desc, scalars);
  const y = new Float64Array(p.outputs);
  reduceInto(p, args.x!.values, y);
  return { y };
};

export const onnxReduceCpu: CpuKernel = (args, scalars) => {
  const [x, y] = args as [CpuArg, CpuArg];
  const p = reducePlan(x.desc, y.desc, scalars);
  const out = new Float64Array(p.outputs);
  reduceInto(p, floatCopyOf(x), out);
  const yf = isHalf(y.desc.dtype) ? new Float32Array(p.outputs) : (y.data as FloatArray);
  yf.set(out);
  storeFloat(y, yf);
};

/** OP: 0 sum, 1 mean, 2 max, 3 min, 4 prod, 5 sum_square, 6 l2, 7 log_sum_exp. */
export const onnxReduceCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_reduce',
  source: `${MATH_OVERLOADS}${CUDA_INDEX}
#if OP == 2 || OP == 7
#define INIT (-(X_c)(1.0 / 0.0))
#define COMBINE(a, b) (((a) != (a) || (b) != (b)) ? (a) + (b) : ((a) > (b) ? (a) : (b)))
#elif OP == 3
#define INIT ((X_c)(1.0 / 0.0))
#define COMBINE(a, b) (((a) != (a) || (b) != (b)) ? (a) + (b) : ((a) < (b) ? (a) : (b)))
#elif OP == 4
#define INIT ((X_c)1)
#define COMBINE(a, b) ((a) * (b))
#else
#define INIT ((X_c)0)
#define COMBINE(a, b) ((a) + (b))
#endif
static __device__ X_c block_combine(X_c v, X_c* sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (threadIdx.x < s) sh[threadIdx.x] = COMBINE(sh[threadIdx.x], sh[threadIdx.x + s]);
    __syncthreads();
  }
  X_c r = sh[0];
  __syncthreads();
  return r;
}
extern "C" __global__ void tdm_onnx_reduce(const X_t* __restrict__ x, X_t* __restrict__ y, long long count,
    DIMS6(kd), DIMS6(ks), DIMS6(rd), DIMS6(rs)) {
  __shared__ X_c sh[256];
  const long long kdims[6] = ARR6(kd), kstr[6] = ARR6(ks), rdims[6] = ARR6(rd), rstr[6] = ARR6(rs);
  long long base = offset6(blockIdx.x, kdims, kstr);
  X_c acc = INIT;
  for (long long j = threadIdx.x; j < count; j += blockDim.x) {
    X_c v = ldX(x, base + offset6(j, rdims, rstr));
#if OP == 5 || OP == 6
    v = v * v;
#endif
    acc = COMBINE(acc, v);
  }
  X_c r = block_combine(acc, sh);
#if OP == 7
  if (r == r && r != INIT && r != -INIT) {
    X_c s = (X_c)0;
    for (long long j = threadIdx.x; j < count; j += blockDim.x) s += m_exp(ldX(x, base + offset6(j, rdims, rstr)) - r);
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
      if (threadIdx.x < k) sh[threadIdx.x] += sh[threadIdx.x + k];
      __syncthreads();
    }
    r = r + m_log(sh[0]);
  }
#elif OP == 1
  r = r / (X_c)count;
#elif OP == 6
  r = m_sqrt(r);
#endif
  if (threadIdx.x == 0) stX(y, blockIdx.x, r);
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  defines: (args, scalars) => {
    const p = reducePlan(args[0]!.desc, args[1]!.desc, scalars);
    return { OP: REDUCE_OPS.indexOf(p.op), IDX32: idx32(Math.max(p.outputs, p.count)) };
  },
  grid: (args, scalars) => [reducePlan(args[0]!.desc, args[1]!.desc, scalars).outputs, 1, 1],
  block: () => BLOCK_DIM,
  params: (args, scalars): CudaParam[] => {
    const p = reducePlan(args[0]!.desc, args[1]!.desc, scalars);
    const kept = pad6(p.keptDims, p.keptStrides);
    const red = pad6(p.redDims, p.redStrides);
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      { kind: 'i64', value: p.count },
      ...i64Params(kept.dims),
      ...i64Params(kept.strides),
      ...i64Params(red.dims),
      ...i64Params(red.strides),
    ];
  },
};
