/**
 * onnx_gather_nd (GatherND): each row of the last axis of `indices` (m i32 coordinates, negative ones
 * counted from the end) picks a slice data[batch…, i0, …, i(m−1), …] after the first `batchDims` axes,
 * which data and indices share. An out-of-range coordinate gives NaN (0 for integer data), as
 * onnx_gather. Definition, float64 reference, CPU and CUDA; elements are copied as stored.
 */
import { isFloat } from '../../core/dtype.js';
import { TandemError } from '../../core/errors.js';
import { numel } from '../../core/shape.js';
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import type { CudaParam, CudaProgram } from '../../devices/cuda/kernel-api.js';
import type { Scalars, TensorDesc } from '../../devices/device.js';
import { BLOCK_DIM, GRID_STRIDE, elementwiseGrid } from '../common/cuda.js';
import type { ReferenceFn } from '../common/reference.js';
import { intScalar } from '../common/scalars.js';
import {
  COPY_DTYPES,
  CUDA_INDEX,
  CUDA_STORE_MISS,
  i64Params,
  missingValue,
  onnxDef,
  requireDTypes,
  streamCost,
} from './common.js';
import { storedValue } from './gather-pad.js';
import { contiguousStrides, MAX_RANK, requireRank, requireShape } from './shapes.js';

export function gatherNdGeometry(
  data: Pick<TensorDesc, 'shape'>,
  indices: Pick<TensorDesc, 'shape'>,
  scalars: Scalars,
) {
  const name = 'onnx_gather_nd';
  requireRank(name, 'data', data.shape, 1);
  requireRank(name, 'indices', indices.shape, 1);
  const b = intScalar(name, scalars, 'batchDims', 0);
  const q = indices.shape.length;
  const m = indices.shape[q - 1]!;
  const bad = (why: string) =>
    new TandemError(
      'TANDEM_ERR_SHAPE',
      `${name}: data [${data.shape.join(',')}], indices [${indices.shape.join(',')}], batchDims ${b}: ${why}`,
      { op: name },
    );
  if (b < 0 || b >= Math.min(q, data.shape.length)) throw bad('batchDims must be below both ranks');
  if (m < 1 || b + m > data.shape.length) throw bad('the index rows must be 1 to rank − batchDims long');
  if (indices.shape.slice(0, b).some((d, i) => d !== data.shape[i])) throw bad('the batch axes differ');
  const slice = data.shape.slice(b + m);
  const ds = contiguousStrides(data.shape);
  return {
    m,
    shape: [...indices.shape.slice(0, q - 1), ...slice],
    /** Index rows per batch entry, and the data elements of one batch entry. */
    rowsPerBatch: numel(indices.shape.slice(b, q - 1)),
    batchSize: numel(data.shape.slice(b)),
    slice: numel(slice),
    dims: data.shape.slice(b, b + m),
    strides: ds.slice(b, b + m),
  };
}

export const onnxGatherNdDef = onnxDef(
  'onnx_gather_nd',
  [
    ['data', 'r'],
    ['indices', 'r'],
    ['y', 'w'],
  ],
  ['batchDims'],
  (args, scalars) => {
    requireDTypes('onnx_gather_nd', args, ['data', 'y'], COPY_DTYPES);
    requireDTypes('onnx_gather_nd', args, ['indices'], ['i32']);
    const g = gatherNdGeometry(args.data!, args.indices!, scalars);
    requireRank('onnx_gather_nd', 'y', g.shape, 0, MAX_RANK);
    requireShape('onnx_gather_nd', 'y', args.y!.shape, g.shape);
  },
  (args) => streamCost(args, 0),
);

function gatherNdInto(
  g: ReturnType<typeof gatherNdGeometry>,
  data: ArrayLike<number>,
  idx: ArrayLike<number>,
  y: { [i: number]: number },
  fill: number,
): void {
  const rows = numel(g.shape) / Math.max(1, g.slice);
  for (let r = 0; r < rows; r++) {
    let off = Math.floor(r / g.rowsPerBatch) * g.batchSize;
    for (let j = 0; j < g.m && off >= 0; j++) {
      const raw = idx[r * g.m + j]!;
      const k = raw < 0 ? raw + g.dims[j]! : raw;
      off = k >= 0 && k < g.dims[j]! ? off + k * g.strides[j]! : -1;
    }
    for (let i = 0; i < g.slice; i++) y[r * g.slice + i] = off < 0 ? fill : data[off + i]!;
  }
}

export const onnxGatherNdReference: ReferenceFn = (args, scalars) => {
  const g = gatherNdGeometry(args.data!.desc, args.indices!.desc, scalars);
  const y = new Float64Array(numel(g.shape));
  gatherNdInto(g, args.data!.values, args.indices!.values, y, missingValue(args.y!.desc.dtype));
  return { y };
};

export const onnxGatherNdCpu: CpuKernel = (args, scalars) => {
  const [data, indices, y] = args as [CpuArg, CpuArg, CpuArg];
  const g = gatherNdGeometry(data.desc, indices.desc, scalars);
  gatherNdInto(g, data.data, indices.data, y.data, storedValue(y.desc.dtype, missingValue(y.desc.dtype)));
};

export const onnxGatherNdCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_gather_nd',
  source: `${CUDA_INDEX}${CUDA_STORE_MISS}
extern "C" __global__ void tdm_onnx_gather_nd(const X_t* __restrict__ data, const int* __restrict__ idx,
    X_t* __restrict__ y, long long n, long long m, long long slice, long long rowsPerBatch, long long batchSize,
    DIMS6(dd), DIMS6(ds)) {
  const long long dims[6] = ARR6(dd), str[6] = ARR6(ds);
  ${GRID_STRIDE} {
    long long r = i / slice, off = (r / rowsPerBatch) * batchSize;
    for (long long j = 0; j < m && off >= 0; ++j) {
      long long k = idx[r * m + j];
      if (k < 0) k += dims[j];
      off = k >= 0 && k < dims[j] ? off + k * str[j] : -1;
    }
    if (off >= 0) y[i] = data[off + i % slice];
    else store_miss(y, i);
  }
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  defines: (args) => ({ IS_FLOAT: isFloat(args[0]!.desc.dtype) ? 1 : 0 }),
  grid: (args) => elementwiseGrid(numel(args[2]!.desc.shape)),
  block: () => BLOCK_DIM,
  params: (args, scalars): CudaParam[] => {
    const g = gatherNdGeometry(args[0]!.desc, args[1]!.desc, scalars);
    // The m coordinates' dims and strides, padded to 6 at the end (only the first m are read).
    const pad = (v: number[]) => [...v, ...new Array<number>(6 - v.length).fill(1)];
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      { kind: 'ptr', arg: 2 },
      ...i64Params([numel(g.shape), g.m, Math.max(1, g.slice), Math.max(1, g.rowsPerBatch), g.batchSize]),
      ...i64Params(pad(g.dims)),
      ...i64Params(pad(g.strides)),
    ];
  },
};
