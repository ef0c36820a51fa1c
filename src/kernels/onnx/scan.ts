/**
 * onnx_trilu (Trilu: keep the upper or lower triangle of the last two axes, k diagonals off the main
 * one, zero elsewhere; any dtype, elements copied as stored) and onnx_cumsum (CumSum along one axis,
 * inclusive or exclusive, forward or reversed): definitions, float64 references, CPU and CUDA. CumSum
 * adds in doubles on the CPU and in the compute type on CUDA (f32 for 16-bit floats, i64 for i32),
 * one thread per line along the axis.
 */
import { fromNumbers, isFloat } from '../../core/dtype.js';
import { numel } from '../../core/shape.js';
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import type { CudaParam, CudaProgram } from '../../devices/cuda/kernel-api.js';
import type { Scalars, TensorDesc } from '../../devices/device.js';
import { BLOCK_DIM, GRID_STRIDE, elementwiseGrid } from '../common/cuda.js';
import type { ReferenceFn } from '../common/reference.js';
import { boolScalar, intScalar } from '../common/scalars.js';
import { floatCopyOf } from '../common/cpu-float.js';
import { COPY_DTYPES, FLOAT_DTYPES, i64Params, onnxDef, requireDTypes, streamCost } from './common.js';
import { normalizeAxis, requireRank, requireShape } from './shapes.js';

// ---- trilu

export function triluGeometry(x: TensorDesc, scalars: Scalars) {
  requireRank('onnx_trilu', 'x', x.shape, 2);
  const r = x.shape.length;
  return {
    upper: boolScalar('onnx_trilu', scalars, 'upper', true),
    k: intScalar('onnx_trilu', scalars, 'k', 0),
    rows: x.shape[r - 2]!,
    cols: x.shape[r - 1]!,
  };
}

export const onnxTriluDef = onnxDef(
  'onnx_trilu',
  [
    ['x', 'r'],
    ['y', 'w'],
  ],
  ['upper', 'k'],
  (args, scalars) => {
    requireDTypes('onnx_trilu', args, ['x', 'y'], COPY_DTYPES);
    triluGeometry(args.x!, scalars);
    requireShape('onnx_trilu', 'y', args.y!.shape, args.x!.shape);
  },
  (args) => streamCost(args, 0),
);

/** Each element kept or zeroed; 0 is the all-zero word in every COPY_DTYPE (+0.0 for the floats). */
function triluInto(x: TensorDesc, scalars: Scalars, from: ArrayLike<number>, to: { [i: number]: number }) {
  const g = triluGeometry(x, scalars);
  const n = numel(x.shape);
  for (let i = 0; i < n; i++) {
    const d = (i % g.cols) - (Math.floor(i / g.cols) % g.rows);
    to[i] = (g.upper ? d >= g.k : d <= g.k) ? from[i]! : 0;
  }
}

export const onnxTriluReference: ReferenceFn = (args, scalars) => {
  const y = new Float64Array(numel(args.x!.desc.shape));
  triluInto(args.x!.desc, scalars, args.x!.values, y);
  return { y };
};

export const onnxTriluCpu: CpuKernel = (args, scalars) => {
  const [x, y] = args as [CpuArg, CpuArg];
  triluInto(x.desc, scalars, x.data, y.data);
};

export const onnxTriluCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_trilu',
  source: `
extern "C" __global__ void tdm_onnx_trilu(const X_t* __restrict__ x, X_t* __restrict__ y, long long n,
    long long rows, long long cols, long long upper, long long k) {
  ${GRID_STRIDE} {
    long long d = i % cols - (i / cols) % rows;
    bool keep = upper ? d >= k : d <= k;
    y[i] = keep ? x[i] : (X_t)0;
  }
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  grid: (args) => elementwiseGrid(numel(args[0]!.desc.shape)),
  block: () => BLOCK_DIM,
  params: (args, scalars): CudaParam[] => {
    const x = args[0]!.desc;
    const g = triluGeometry(x, scalars);
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      ...i64Params([numel(x.shape), g.rows, g.cols, g.upper ? 1 : 0, g.k]),
    ];
  },
};

// ---- cumsum

export const CUMSUM_DTYPES = [...FLOAT_DTYPES, 'i32'] as const;

export function cumsumGeometry(x: TensorDesc, scalars: Scalars) {
  const name = 'onnx_cumsum';
  requireRank(name, 'x', x.shape, 1);
  const axis = normalizeAxis(name, intScalar(name, scalars, 'axis', 0), x.shape.length);
  return {
    exclusive: boolScalar(name, scalars, 'exclusive', false),
    reverse: boolScalar(name, scalars, 'reverse', false),
    outer: numel(x.shape.slice(0, axis)),
    dim: x.shape[axis]!,
    inner: numel(x.shape.slice(axis + 1)),
  };
}

export const onnxCumsumDef = onnxDef(
  'onnx_cumsum',
  [
    ['x', 'r'],
    ['y', 'w'],
  ],
  ['axis', 'exclusive', 'reverse'],
  (args, scalars) => {
    requireDTypes('onnx_cumsum', args, ['x', 'y'], CUMSUM_DTYPES);
    cumsumGeometry(args.x!, scalars);
    requireShape('onnx_cumsum', 'y', args.y!.shape, args.x!.shape);
  },
  (args) => streamCost(args, 1),
);

function cumsumInto(x: TensorDesc, scalars: Scalars, from: ArrayLike<number>, to: Float64Array) {
  const g = cumsumGeometry(x, scalars);
  for (let o = 0; o < g.outer; o++)
    for (let i = 0; i < g.inner; i++) {
      let acc = 0;
      for (let t = 0; t < g.dim; t++) {
        const k = g.reverse ? g.dim - 1 - t : t;
        const at = (o * g.dim + k) * g.inner + i;
        const v = from[at]!;
        if (g.exclusive) {
          to[at] = acc;
          acc += v;
        } else {
          acc += v;
          to[at] = acc;
        }
      }
    }
}

export const onnxCumsumReference: ReferenceFn = (args, scalars) => {
  const y = new Float64Array(numel(args.x!.desc.shape));
  cumsumInto(args.x!.desc, scalars, args.x!.values, y);
  return { y };
};

/** Sums in doubles, one rounding to the dtype on store; i32 sums saturate as CUDA's store does. */
export const onnxCumsumCpu: CpuKernel = (args, scalars) => {
  const [x, y] = args as [CpuArg, CpuArg];
  const out = new Float64Array(numel(x.desc.shape));
  cumsumInto(x.desc, scalars, floatCopyOf(x), out);
  if (y.desc.dtype === 'i32')
    for (let i = 0; i < out.length; i++) out[i] = Math.min(Math.max(out[i]!, -(2 ** 31)), 2 ** 31 - 1);
  fromNumbers(y.desc.dtype, out, y.data);
};

export const onnxCumsumCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_cumsum',
  source: `
#if IS_FLOAT
typedef X_c acc_t;
#else
typedef long long acc_t;
#endif
extern "C" __global__ void tdm_onnx_cumsum(const X_t* __restrict__ x, X_t* __restrict__ y, long long n,
    long long dim, long long inner, long long exclusive, long long reverse) {
  ${GRID_STRIDE} {
    long long in = i % inner, o = i / inner;
    acc_t acc = (acc_t)0;
    for (long long t = 0; t < dim; ++t) {
      long long at = (o * dim + (reverse ? dim - 1 - t : t)) * inner + in;
      acc_t v = (acc_t)ldX(x, at);
      if (exclusive) {
        stX(y, at, acc);
        acc += v;
      } else {
        acc += v;
        stX(y, at, acc);
      }
    }
  }
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  defines: (args) => ({ IS_FLOAT: isFloat(args[0]!.desc.dtype) ? 1 : 0 }),
  grid: (args, scalars) => {
    const g = cumsumGeometry(args[0]!.desc, scalars);
    return elementwiseGrid(g.outer * g.inner);
  },
  block: () => BLOCK_DIM,
  params: (args, scalars): CudaParam[] => {
    const g = cumsumGeometry(args[0]!.desc, scalars);
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      ...i64Params([g.outer * g.inner, g.dim, g.inner, g.exclusive ? 1 : 0, g.reverse ? 1 : 0]),
    ];
  },
};
