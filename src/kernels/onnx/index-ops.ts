/**
 * onnx_argreduce (ArgMax / ArgMin along one axis, i32 indices: the executor's int64 on device) and
 * onnx_gather_elements (GatherElements: take along an axis with an index per output element):
 * definitions, float64 references, CPU and CUDA. NaN wins both ArgMax and ArgMin (numpy's rule, which
 * ONNX's reference follows): the first NaN, or the last with selectLastIndex.
 */
import { isFloat } from '../../core/dtype.js';
import { TandemError } from '../../core/errors.js';
import { numel } from '../../core/shape.js';
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import type { CudaParam, CudaProgram } from '../../devices/cuda/kernel-api.js';
import type { Scalars, TensorDesc } from '../../devices/device.js';
import { floatCopyOf } from '../common/cpu-float.js';
import { BLOCK_DIM, GRID_STRIDE, elementwiseGrid } from '../common/cuda.js';
import type { ReferenceFn } from '../common/reference.js';
import { boolScalar, enumScalar, intScalar } from '../common/scalars.js';
import {
  COPY_DTYPES,
  CUDA_INDEX,
  CUDA_STORE_MISS,
  i64Params,
  missingValue,
  onnxDef,
  pad6,
  requireDTypes,
  streamCost,
} from './common.js';
import { storedValue } from './gather-pad.js';
import { contiguousStrides, normalizeAxis, requireRank, requireShape } from './shapes.js';

// ---- argreduce

export const ARG_OPS = ['max', 'min'] as const;

export function argGeometry(x: Pick<TensorDesc, 'shape'>, scalars: Scalars) {
  const name = 'onnx_argreduce';
  requireRank(name, 'x', x.shape, 1);
  const op = enumScalar(name, scalars, 'op', ARG_OPS);
  const axis = normalizeAxis(name, intScalar(name, scalars, 'axis', 0), x.shape.length);
  const keepdims = boolScalar(name, scalars, 'keepdims', true);
  const last = boolScalar(name, scalars, 'selectLastIndex', false);
  const dim = x.shape[axis]!;
  if (dim === 0 || dim > 2 ** 31 - 1) {
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `${name}: axis ${axis} has ${dim} elements; its indices must be 1 to 2^31 − 1 (i32)`,
      { op: name },
    );
  }
  const shape = keepdims ? x.shape.map((d, i) => (i === axis ? 1 : d)) : x.shape.filter((_, i) => i !== axis);
  return {
    op,
    last,
    shape,
    outer: numel(x.shape.slice(0, axis)),
    dim,
    inner: numel(x.shape.slice(axis + 1)),
  };
}

export const onnxArgReduceDef = onnxDef(
  'onnx_argreduce',
  [
    ['x', 'r'],
    ['y', 'w'],
  ],
  ['op', 'axis', 'keepdims', 'selectLastIndex'],
  (args, scalars) => {
    requireDTypes('onnx_argreduce', args, ['x'], COPY_DTYPES);
    requireDTypes('onnx_argreduce', args, ['y'], ['i32']);
    requireShape('onnx_argreduce', 'y', args.y!.shape, argGeometry(args.x!, scalars).shape);
  },
  (args) => streamCost(args, numel(args.x!.shape) / Math.max(1, numel(args.y!.shape))),
);

function argInto(g: ReturnType<typeof argGeometry>, x: ArrayLike<number>, y: { [i: number]: number }): void {
  const min = g.op === 'min';
  for (let o = 0; o < g.outer; o++)
    for (let i = 0; i < g.inner; i++) {
      const base = o * g.dim * g.inner + i;
      let best = x[base]!;
      let at = 0;
      for (let k = 1; k < g.dim; k++) {
        const v = x[base + k * g.inner]!;
        let take: boolean;
        if (best !== best) take = g.last && v !== v;
        else if (v !== v) take = true;
        else if (g.last) take = min ? v <= best : v >= best;
        else take = min ? v < best : v > best;
        if (take) {
          best = v;
          at = k;
        }
      }
      y[o * g.inner + i] = at;
    }
}

export const onnxArgReduceReference: ReferenceFn = (args, scalars) => {
  const g = argGeometry(args.x!.desc, scalars);
  const y = new Float64Array(g.outer * g.inner);
  argInto(g, args.x!.values, y);
  return { y };
};

export const onnxArgReduceCpu: CpuKernel = (args, scalars) => {
  const [x, y] = args as [CpuArg, CpuArg];
  argInto(argGeometry(x.desc, scalars), floatCopyOf(x), y.data);
};

export const onnxArgReduceCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_argreduce',
  source: `
extern "C" __global__ void tdm_onnx_argreduce(const X_t* __restrict__ x, int* __restrict__ y, long long n,
    long long dim, long long inner) {
  ${GRID_STRIDE} {
    long long in = i % inner, o = i / inner, base = o * dim * inner + in;
    X_c best = ldX(x, base);
    int at = 0;
    for (long long k = 1; k < dim; ++k) {
      X_c v = ldX(x, base + k * inner);
      bool take;
      if (best != best) take = LAST && v != v;
      else if (v != v) take = true;
#if LAST
      else take = MIN ? v <= best : v >= best;
#else
      else take = MIN ? v < best : v > best;
#endif
      if (take) {
        best = v;
        at = (int)k;
      }
    }
    y[i] = at;
  }
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  defines: (args, scalars) => {
    const g = argGeometry(args[0]!.desc, scalars);
    return { MIN: g.op === 'min' ? 1 : 0, LAST: g.last ? 1 : 0 };
  },
  grid: (args) => elementwiseGrid(numel(args[1]!.desc.shape)),
  block: () => BLOCK_DIM,
  params: (args, scalars): CudaParam[] => {
    const g = argGeometry(args[0]!.desc, scalars);
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      ...i64Params([g.outer * g.inner, g.dim, g.inner]),
    ];
  },
};

// ---- gather_elements

/** Data and indices of one rank; indices no larger than data off the axis (ONNX Runtime's rule). */
export function gatherElementsGeometry(data: TensorDesc, indices: TensorDesc, scalars: Scalars) {
  const name = 'onnx_gather_elements';
  requireRank(name, 'data', data.shape, 1);
  const rank = data.shape.length;
  const axis = normalizeAxis(name, intScalar(name, scalars, 'axis', 0), rank);
  if (indices.shape.length !== rank || indices.shape.some((d, i) => i !== axis && d > data.shape[i]!)) {
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `${name}: indices [${indices.shape.join(',')}] must have data's rank and fit data [${data.shape.join(',')}] off axis ${axis}`,
      { op: name },
    );
  }
  return { axis, dim: data.shape[axis]!, dataStrides: contiguousStrides(data.shape) };
}

export const onnxGatherElementsDef = onnxDef(
  'onnx_gather_elements',
  [
    ['data', 'r'],
    ['indices', 'r'],
    ['y', 'w'],
  ],
  ['axis'],
  (args, scalars) => {
    requireDTypes('onnx_gather_elements', args, ['data', 'y'], COPY_DTYPES);
    requireDTypes('onnx_gather_elements', args, ['indices'], ['i32']);
    gatherElementsGeometry(args.data!, args.indices!, scalars);
    requireShape('onnx_gather_elements', 'y', args.y!.shape, args.indices!.shape);
  },
  (args) => streamCost(args, 0),
);

function gatherElementsInto(
  data: TensorDesc,
  indices: TensorDesc,
  scalars: Scalars,
  from: ArrayLike<number>,
  idx: ArrayLike<number>,
  y: { [i: number]: number },
  fill: number,
): void {
  const g = gatherElementsGeometry(data, indices, scalars);
  const shape = indices.shape;
  const rank = shape.length;
  const coord = new Array<number>(rank).fill(0);
  const n = numel(shape);
  for (let i = 0; i < n; i++) {
    const raw = idx[i]!;
    const k = raw < 0 ? raw + g.dim : raw;
    if (k >= 0 && k < g.dim) {
      let off = 0;
      for (let d = 0; d < rank; d++) off += (d === g.axis ? k : coord[d]!) * g.dataStrides[d]!;
      y[i] = from[off]!;
    } else {
      y[i] = fill;
    }
    for (let d = rank - 1; d >= 0; d--) {
      if (++coord[d]! < shape[d]!) break;
      coord[d] = 0;
    }
  }
}

export const onnxGatherElementsReference: ReferenceFn = (args, scalars) => {
  const [data, indices] = [args.data!, args.indices!];
  const y = new Float64Array(numel(indices.desc.shape));
  const fill = missingValue(args.y!.desc.dtype);
  gatherElementsInto(data.desc, indices.desc, scalars, data.values, indices.values, y, fill);
  return { y };
};

export const onnxGatherElementsCpu: CpuKernel = (args, scalars) => {
  const [data, indices, y] = args as [CpuArg, CpuArg, CpuArg];
  const fill = storedValue(y.desc.dtype, missingValue(y.desc.dtype));
  gatherElementsInto(data.desc, indices.desc, scalars, data.data, indices.data, y.data, fill);
};

export const onnxGatherElementsCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_gather_elements',
  source: `${CUDA_INDEX}${CUDA_STORE_MISS}
extern "C" __global__ void tdm_onnx_gather_elements(const X_t* __restrict__ data, const int* __restrict__ idx,
    X_t* __restrict__ y, long long n, long long dim, long long axis, DIMS6(id), DIMS6(ds)) {
  const long long idims[6] = ARR6(id), dstr[6] = ARR6(ds);
  ${GRID_STRIDE} {
    long long k = idx[i];
    if (k < 0) k += dim;
    if (k < 0 || k >= dim) {
      store_miss(y, i);
      continue;
    }
    long long r = i, off = 0;
    for (int a = 5; a >= 0; --a) {
      long long c = r % idims[a];
      r /= idims[a];
      off += (a == axis ? k : c) * dstr[a];
    }
    y[i] = data[off];
  }
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  defines: (args) => ({ IS_FLOAT: isFloat(args[0]!.desc.dtype) ? 1 : 0 }),
  grid: (args) => elementwiseGrid(numel(args[2]!.desc.shape)),
  block: () => BLOCK_DIM,
  params: (args, scalars): CudaParam[] => {
    const [data, indices] = [args[0]!.desc, args[1]!.desc];
    const g = gatherElementsGeometry(data, indices, scalars);
    const ip = pad6(indices.shape, []);
    const dp = pad6(data.shape, g.dataStrides);
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      { kind: 'ptr', arg: 2 },
      ...i64Params([numel(indices.shape), g.dim, g.axis + 6 - data.shape.length]),
      ...i64Params(ip.dims),
      ...i64Params(dp.strides),
    ];
  },
};
