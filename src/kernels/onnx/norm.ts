/**
 * onnx_batchnorm (inference), onnx_layernorm (any axis) and onnx_softmax (softmax / log-softmax along
 * one axis): definitions, float64 references, CPU and CUDA. See docs/onnx-kernels.md.
 */
import { numel } from '../../core/shape.js';
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import type { CudaParam, CudaProgram } from '../../devices/cuda/kernel-api.js';
import type { Scalars, TensorDesc } from '../../devices/device.js';
import { type FloatArray, floatCopyOf, isHalf, storeFloat } from '../common/cpu-float.js';
import { BLOCK_DIM, GRID_STRIDE, MATH_OVERLOADS, elementwiseGrid } from '../common/cuda.js';
import type { ReferenceFn } from '../common/reference.js';
import { boolScalar, intScalar, numberScalar } from '../common/scalars.js';
import { CUDA_BLOCK_REDUCE, FLOAT_DTYPES, onnxDef, requireDTypes, streamCost } from './common.js';
import { normalizeAxis, requireRank, requireShape } from './shapes.js';

export function epsilonOf(op: string, scalars: Scalars): number {
  return numberScalar(op, scalars, 'epsilon', 1e-5);
}

/** x [N,C,…]: channels and the elements per channel plane. */
export function channels(x: TensorDesc): { c: number; inner: number } {
  return { c: x.shape[1]!, inner: numel(x.shape.slice(2)) };
}

export const onnxBatchnormDef = onnxDef(
  'onnx_batchnorm',
  [
    ['x', 'r'],
    ['scale', 'r'],
    ['bias', 'r'],
    ['mean', 'r'],
    ['var', 'r'],
    ['y', 'w'],
  ],
  ['epsilon'],
  (args, scalars) => {
    epsilonOf('onnx_batchnorm', scalars);
    requireDTypes('onnx_batchnorm', args, ['x', 'scale', 'bias', 'mean', 'var', 'y'], FLOAT_DTYPES);
    requireRank('onnx_batchnorm', 'x', args.x!.shape, 2);
    const c = args.x!.shape[1]!;
    for (const n of ['scale', 'bias', 'mean', 'var']) requireShape('onnx_batchnorm', n, args[n]!.shape, [c]);
    requireShape('onnx_batchnorm', 'y', args.y!.shape, args.x!.shape);
  },
  (args) => streamCost(args, 2),
);

export const onnxBatchnormReference: ReferenceFn = (args, scalars) => {
  const eps = epsilonOf('onnx_batchnorm', scalars);
  const { c, inner } = channels(args.x!.desc);
  const [s, b, m, v] = ['scale', 'bias', 'mean', 'var'].map((n) => args[n]!.values) as [
    Float64Array,
    Float64Array,
    Float64Array,
    Float64Array,
  ];
  const y = args.x!.values.map((x, i) => {
    const ch = Math.floor(i / inner) % c;
    return ((x - m[ch]!) / Math.sqrt(v[ch]! + eps)) * s[ch]! + b[ch]!;
  });
  return { y };
};

export const onnxBatchnormCpu: CpuKernel = (args, scalars) => {
  const [x, scale, bias, mean, variance, y] = args as [CpuArg, CpuArg, CpuArg, CpuArg, CpuArg, CpuArg];
  const eps = epsilonOf('onnx_batchnorm', scalars);
  const { c, inner } = channels(x.desc);
  const [xf, s, b, m, v] = [x, scale, bias, mean, variance].map(floatCopyOf) as FloatArray[];
  const yf = isHalf(y.desc.dtype) ? new Float32Array(y.data.length) : (y.data as FloatArray);
  for (let start = 0, plane = 0; start < yf.length; start += inner, plane++) {
    const ch = plane % c;
    const r = 1 / Math.sqrt(v![ch]! + eps);
    for (let i = start; i < start + inner; i++) yf[i] = (xf![i]! - m![ch]!) * r * s![ch]! + b![ch]!;
  }
  storeFloat(y, yf);
};

export const onnxBatchnormCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_batchnorm',
  source: `${MATH_OVERLOADS}
extern "C" __global__ void tdm_onnx_batchnorm(const X_t* __restrict__ x, const X_t* __restrict__ sc,
    const X_t* __restrict__ bi, const X_t* __restrict__ me, const X_t* __restrict__ va, X_t* __restrict__ y,
    long long n, long long C, long long inner, double eps) {
  ${GRID_STRIDE} {
    long long c = (i / inner) % C;
    X_c r = (X_c)1 / m_sqrt(ldX(va, c) + (X_c)eps);
    stX(y, i, (ldX(x, i) - ldX(me, c)) * r * ldX(sc, c) + ldX(bi, c));
  }
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  grid: (args) => elementwiseGrid(numel(args[0]!.desc.shape)),
  block: () => BLOCK_DIM,
  params: (args, scalars) => {
    const { c, inner } = channels(args[0]!.desc);
    return [
      ...[0, 1, 2, 3, 4, 5].map((arg): CudaParam => ({ kind: 'ptr', arg })),
      { kind: 'i64', value: numel(args[0]!.desc.shape) },
      { kind: 'i64', value: c },
      { kind: 'i64', value: inner },
      { kind: 'f64', value: epsilonOf('onnx_batchnorm', scalars) },
    ];
  },
};

/** layernorm over x's axes [axis, rank): rows and row length. */
export function layernormRows(x: TensorDesc, scalars: Scalars): { rows: number; len: number; axis: number } {
  const axis = normalizeAxis(
    'onnx_layernorm',
    intScalar('onnx_layernorm', scalars, 'axis', -1),
    x.shape.length,
  );
  return { rows: numel(x.shape.slice(0, axis)), len: numel(x.shape.slice(axis)), axis };
}

export const onnxLayernormDef = onnxDef(
  'onnx_layernorm',
  [
    ['x', 'r'],
    ['scale', 'r'],
    ['bias', 'r'],
    ['y', 'w'],
  ],
  ['axis', 'epsilon'],
  (args, scalars) => {
    epsilonOf('onnx_layernorm', scalars);
    requireDTypes('onnx_layernorm', args, ['x', 'scale', 'bias', 'y'], FLOAT_DTYPES);
    requireRank('onnx_layernorm', 'x', args.x!.shape, 1);
    const { axis, len } = layernormRows(args.x!, scalars);
    const tail = args.x!.shape.slice(axis);
    for (const n of ['scale', 'bias']) {
      const s = args[n]!.shape;
      if (!(s.length === 1 && s[0] === len)) requireShape('onnx_layernorm', n, s, tail);
    }
    requireShape('onnx_layernorm', 'y', args.y!.shape, args.x!.shape);
  },
  (args) => streamCost(args, 8),
);

function layernormRow(
  x: ArrayLike<number>,
  s: ArrayLike<number>,
  b: ArrayLike<number>,
  y: FloatArray,
  start: number,
  len: number,
  eps: number,
) {
  let sum = 0;
  for (let i = 0; i < len; i++) sum += x[start + i]!;
  const mean = sum / len;
  let sq = 0;
  for (let i = 0; i < len; i++) sq += (x[start + i]! - mean) ** 2;
  const rstd = 1 / Math.sqrt(sq / len + eps);
  for (let i = 0; i < len; i++) y[start + i] = (x[start + i]! - mean) * rstd * s[i]! + b[i]!;
}

export const onnxLayernormReference: ReferenceFn = (args, scalars) => {
  const { rows, len } = layernormRows(args.x!.desc, scalars);
  const y = new Float64Array(rows * len);
  const eps = epsilonOf('onnx_layernorm', scalars);
  for (let r = 0; r < rows; r++)
    layernormRow(args.x!.values, args.scale!.values, args.bias!.values, y, r * len, len, eps);
  return { y };
};

export const onnxLayernormCpu: CpuKernel = (args, scalars) => {
  const [x, scale, bias, y] = args as [CpuArg, CpuArg, CpuArg, CpuArg];
  const { rows, len } = layernormRows(x.desc, scalars);
  const eps = epsilonOf('onnx_layernorm', scalars);
  const [xf, s, b] = [x, scale, bias].map(floatCopyOf) as [FloatArray, FloatArray, FloatArray];
  const yf = isHalf(y.desc.dtype) ? new Float32Array(y.data.length) : (y.data as FloatArray);
  for (let r = 0; r < rows; r++) layernormRow(xf, s, b, yf, r * len, len, eps);
  storeFloat(y, yf);
};

/** One block per row: two-pass mean and variance (block reductions), then the normalized row. */
export const onnxLayernormCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_layernorm',
  source: `${MATH_OVERLOADS}${CUDA_BLOCK_REDUCE}
extern "C" __global__ void tdm_onnx_layernorm(const X_t* __restrict__ x, const X_t* __restrict__ sc,
    const X_t* __restrict__ bi, X_t* __restrict__ y, long long len, double eps) {
  __shared__ X_c sh[256];
  const X_t* xr = x + blockIdx.x * len;
  X_t* yr = y + blockIdx.x * len;
  X_c acc = (X_c)0;
  for (long long i = threadIdx.x; i < len; i += blockDim.x) acc += ldX(xr, i);
  X_c mean = block_sum(acc, sh) / (X_c)len;
  acc = (X_c)0;
  for (long long i = threadIdx.x; i < len; i += blockDim.x) { X_c d = ldX(xr, i) - mean; acc += d * d; }
  X_c rstd = (X_c)1 / m_sqrt(block_sum(acc, sh) / (X_c)len + (X_c)eps);
  for (long long i = threadIdx.x; i < len; i += blockDim.x) stX(yr, i, (ldX(xr, i) - mean) * rstd * ldX(sc, i) + ldX(bi, i));
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  grid: (args, scalars) => [layernormRows(args[0]!.desc, scalars).rows, 1, 1],
  block: () => BLOCK_DIM,
  params: (args, scalars) => [
    ...[0, 1, 2, 3].map((arg): CudaParam => ({ kind: 'ptr', arg })),
    { kind: 'i64', value: layernormRows(args[0]!.desc, scalars).len },
    { kind: 'f64', value: epsilonOf('onnx_layernorm', scalars) },
  ],
};

/** softmax along `axis`: outer rows × len along the axis × inner (the axis' stride). */
export function softmaxGeometry(x: TensorDesc, scalars: Scalars) {
  const rank = Math.max(x.shape.length, 1);
  const axis = normalizeAxis('onnx_softmax', intScalar('onnx_softmax', scalars, 'axis', -1), rank);
  const shape = x.shape.length === 0 ? [1] : x.shape;
  return { outer: numel(shape.slice(0, axis)), len: shape[axis]!, inner: numel(shape.slice(axis + 1)) };
}

export const onnxSoftmaxDef = onnxDef(
  'onnx_softmax',
  [
    ['x', 'r'],
    ['y', 'w'],
  ],
  ['axis', 'log'],
  (args, scalars) => {
    boolScalar('onnx_softmax', scalars, 'log', false);
    requireDTypes('onnx_softmax', args, ['x', 'y'], FLOAT_DTYPES);
    requireRank('onnx_softmax', 'x', args.x!.shape, 0);
    softmaxGeometry(args.x!, scalars);
    requireShape('onnx_softmax', 'y', args.y!.shape, args.x!.shape);
  },
  (args) => streamCost(args, 6),
);

function softmaxLine(
  x: ArrayLike<number>,
  y: FloatArray,
  start: number,
  len: number,
  step: number,
  log: boolean,
) {
  let max = -Infinity;
  for (let k = 0; k < len; k++) {
    const v = x[start + k * step]!;
    max = v > max || v !== v ? v : max;
  }
  let sum = 0;
  for (let k = 0; k < len; k++) sum += Math.exp(x[start + k * step]! - max);
  const lse = Math.log(sum);
  for (let k = 0; k < len; k++) {
    const d = x[start + k * step]! - max;
    y[start + k * step] = log ? d - lse : Math.exp(d) / sum;
  }
}

function softmaxAll(x: ArrayLike<number>, y: FloatArray, desc: TensorDesc, scalars: Scalars) {
  const { outer, len, inner } = softmaxGeometry(desc, scalars);
  const log = boolScalar('onnx_softmax', scalars, 'log', false);
  for (let o = 0; o < outer; o++)
    for (let i = 0; i < inner; i++) softmaxLine(x, y, o * len * inner + i, len, inner, log);
}

export const onnxSoftmaxReference: ReferenceFn = (args, scalars) => {
  const y = new Float64Array(args.x!.values.length);
  softmaxAll(args.x!.values, y, args.x!.desc, scalars);
  return { y };
};

export const onnxSoftmaxCpu: CpuKernel = (args, scalars) => {
  const [x, y] = args as [CpuArg, CpuArg];
  const yf = isHalf(y.desc.dtype) ? new Float32Array(y.data.length) : (y.data as FloatArray);
  softmaxAll(floatCopyOf(x), yf, x.desc, scalars);
  storeFloat(y, yf);
};

/** One block per line (outer × inner of them): max, sum of exponentials, write. */
export const onnxSoftmaxCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_softmax',
  source: `${MATH_OVERLOADS}${CUDA_BLOCK_REDUCE}
extern "C" __global__ void tdm_onnx_softmax(const X_t* __restrict__ x, X_t* __restrict__ y, long long len,
    long long inner) {
  __shared__ X_c sh[256];
  long long line = blockIdx.x;
  long long base = (line / inner) * len * inner + line % inner;
  X_c mx = -(X_c)(1.0 / 0.0);
  for (long long k = threadIdx.x; k < len; k += blockDim.x) {
    X_c v = ldX(x, base + k * inner);
    mx = (v > mx || v != v) ? v : mx;
  }
  mx = block_max(mx, sh);
  X_c acc = (X_c)0;
  for (long long k = threadIdx.x; k < len; k += blockDim.x) acc += m_exp(ldX(x, base + k * inner) - mx);
  X_c sum = block_sum(acc, sh);
  X_c lse = m_log(sum);
  for (long long k = threadIdx.x; k < len; k += blockDim.x) {
    X_c d = ldX(x, base + k * inner) - mx;
#if LOG
    stX(y, base + k * inner, d - lse);
#else
    stX(y, base + k * inner, m_exp(d) / sum);
#endif
  }
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  defines: (_args, scalars) => ({ LOG: boolScalar('onnx_softmax', scalars, 'log', false) ? 1 : 0 }),
  grid: (args, scalars) => {
    const g = softmaxGeometry(args[0]!.desc, scalars);
    return [g.outer * g.inner, 1, 1];
  },
  block: () => BLOCK_DIM,
  params: (args, scalars) => {
    const g = softmaxGeometry(args[0]!.desc, scalars);
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      { kind: 'i64', value: g.len },
      { kind: 'i64', value: g.inner },
    ];
  },
};
