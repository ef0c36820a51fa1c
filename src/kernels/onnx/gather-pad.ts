/**
 * onnx_gather (take along an axis, i32 indices) and onnx_pad (constant / reflect / edge, negative pads
 * crop): definitions, float64 references, CPU and CUDA. Elements are copied as stored (any dtype).
 */
import { type DType, type HostArray, fromNumbers, hostView, isFloat } from '../../core/dtype.js';
import { TandemError } from '../../core/errors.js';
import { numel } from '../../core/shape.js';
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import type { CudaParam, CudaProgram } from '../../devices/cuda/kernel-api.js';
import type { Scalars, TensorDesc } from '../../devices/device.js';
import { BLOCK_DIM, GRID_STRIDE, elementwiseGrid } from '../common/cuda.js';
import type { ReferenceFn } from '../common/reference.js';
import { enumScalar, intScalar, numberScalar } from '../common/scalars.js';
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
import { contiguousStrides, intList, normalizeAxis, requireRank, requireShape } from './shapes.js';

// ---- gather

export function gatherGeometry(data: TensorDesc, indices: TensorDesc, scalars: Scalars) {
  requireRank('onnx_gather', 'data', data.shape, 1);
  const axis = normalizeAxis('onnx_gather', intScalar('onnx_gather', scalars, 'axis', 0), data.shape.length);
  const shape = [...data.shape.slice(0, axis), ...indices.shape, ...data.shape.slice(axis + 1)];
  return {
    shape,
    outer: numel(data.shape.slice(0, axis)),
    dim: data.shape[axis]!,
    count: numel(indices.shape),
    inner: numel(data.shape.slice(axis + 1)),
  };
}

export const onnxGatherDef = onnxDef(
  'onnx_gather',
  [
    ['data', 'r'],
    ['indices', 'r'],
    ['y', 'w'],
  ],
  ['axis'],
  (args, scalars) => {
    requireDTypes('onnx_gather', args, ['data', 'y'], COPY_DTYPES);
    requireDTypes('onnx_gather', args, ['indices'], ['i32']);
    requireShape('onnx_gather', 'y', args.y!.shape, gatherGeometry(args.data!, args.indices!, scalars).shape);
  },
  (args) => streamCost(args, 0),
);

function gatherInto(
  g: ReturnType<typeof gatherGeometry>,
  data: ArrayLike<number>,
  idx: ArrayLike<number>,
  y: { [i: number]: number },
  fill: number,
): void {
  let at = 0;
  for (let o = 0; o < g.outer; o++)
    for (let j = 0; j < g.count; j++) {
      const raw = idx[j]!;
      const k = raw < 0 ? raw + g.dim : raw;
      const ok = k >= 0 && k < g.dim;
      const base = (o * g.dim + k) * g.inner;
      for (let i = 0; i < g.inner; i++) y[at++] = ok ? data[base + i]! : fill;
    }
}

export const onnxGatherReference: ReferenceFn = (args, scalars) => {
  const g = gatherGeometry(args.data!.desc, args.indices!.desc, scalars);
  const y = new Float64Array(numel(g.shape));
  gatherInto(g, args.data!.values, args.indices!.values, y, missingValue(args.y!.desc.dtype));
  return { y };
};

/** `value` as the raw stored element of `dtype` (f16/bf16 words, integers saturated). */
export function storedValue(dtype: DType, value: number): number {
  const one: HostArray = hostView(dtype, new ArrayBuffer(8), 0, 1);
  fromNumbers(dtype, [value], one);
  return one[0]!;
}

export const onnxGatherCpu: CpuKernel = (args, scalars) => {
  const [data, indices, y] = args as [CpuArg, CpuArg, CpuArg];
  const g = gatherGeometry(data.desc, indices.desc, scalars);
  gatherInto(g, data.data, indices.data, y.data, storedValue(y.desc.dtype, missingValue(y.desc.dtype)));
};

export const onnxGatherCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_gather',
  source: `${CUDA_STORE_MISS}
extern "C" __global__ void tdm_onnx_gather(const X_t* __restrict__ data, const int* __restrict__ idx,
    X_t* __restrict__ y, long long n, long long dim, long long count, long long inner) {
  ${GRID_STRIDE} {
    long long in = i % inner, j = (i / inner) % count, o = i / (inner * count);
    long long k = idx[j];
    if (k < 0) k += dim;
    if (k >= 0 && k < dim) y[i] = data[(o * dim + k) * inner + in];
    else store_miss(y, i);
  }
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  defines: (args) => ({ IS_FLOAT: isFloat(args[0]!.desc.dtype) ? 1 : 0 }),
  grid: (args) => elementwiseGrid(numel(args[2]!.desc.shape)),
  block: () => BLOCK_DIM,
  params: (args, scalars): CudaParam[] => {
    const g = gatherGeometry(args[0]!.desc, args[1]!.desc, scalars);
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      { kind: 'ptr', arg: 2 },
      ...i64Params([numel(g.shape), g.dim, g.count, g.inner]),
    ];
  },
};

// ---- pad

export const PAD_MODES = ['constant', 'reflect', 'edge'] as const;
type PadMode = (typeof PAD_MODES)[number];

export function padGeometry(
  x: TensorDesc,
  scalars: Scalars,
): { mode: PadMode; begins: number[]; shape: number[]; value: number } {
  const mode = enumScalar('onnx_pad', scalars, 'mode', PAD_MODES, 'constant');
  const value = numberScalar('onnx_pad', scalars, 'value', 0);
  const rank = x.shape.length;
  const pads = intList('onnx_pad', scalars, 'pads');
  if (pads.length !== 2 * rank) {
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `onnx_pad: pads needs ${2 * rank} integers, got ${pads.length}`,
      {
        op: 'onnx_pad',
        scalar: 'pads',
      },
    );
  }
  const begins = pads.slice(0, rank);
  const shape = x.shape.map((d, i) => d + begins[i]! + pads[rank + i]!);
  x.shape.forEach((d, i) => {
    const reflectTooWide =
      mode === 'reflect' &&
      (begins[i]! >= d || pads[rank + i]! >= d) &&
      (begins[i]! > 0 || pads[rank + i]! > 0);
    const emptyEdge = mode !== 'constant' && d === 0 && shape[i]! > 0;
    if (shape[i]! < 0 || reflectTooWide || emptyEdge) {
      throw new TandemError(
        'TANDEM_ERR_SHAPE',
        `onnx_pad: pads "${pads.join(',')}" do not fit axis ${i} of size ${d} in mode ${mode}`,
        {
          op: 'onnx_pad',
        },
      );
    }
  });
  return { mode, begins, shape, value };
}

export const onnxPadDef = onnxDef(
  'onnx_pad',
  [
    ['x', 'r'],
    ['y', 'w'],
  ],
  ['mode', 'pads', 'value'],
  (args, scalars) => {
    requireDTypes('onnx_pad', args, ['x', 'y'], COPY_DTYPES);
    requireRank('onnx_pad', 'x', args.x!.shape, 1);
    requireShape('onnx_pad', 'y', args.y!.shape, padGeometry(args.x!, scalars).shape);
  },
  (args) => streamCost(args, 0),
);

/** The source index along one axis of size `d` for output coordinate c, or −1 for the constant. */
function padSource(mode: PadMode, c: number, begin: number, d: number): number {
  let s = c - begin;
  if (s >= 0 && s < d) return s;
  if (mode === 'constant') return -1;
  if (mode === 'edge') return s < 0 ? 0 : d - 1;
  // reflect (pads < d, checked): mirror without repeating the edge
  if (s < 0) s = -s;
  if (s >= d) s = 2 * (d - 1) - s;
  return s;
}

function padInto(
  x: TensorDesc,
  scalars: Scalars,
  from: ArrayLike<number>,
  to: { [i: number]: number },
  fill: number,
) {
  const g = padGeometry(x, scalars);
  const rank = x.shape.length;
  const xs = contiguousStrides(x.shape);
  const n = numel(g.shape);
  const coord = new Array<number>(rank).fill(0);
  for (let i = 0; i < n; i++) {
    let off = 0;
    for (let d = 0; d < rank && off >= 0; d++) {
      const s = padSource(g.mode, coord[d]!, g.begins[d]!, x.shape[d]!);
      off = s < 0 ? -1 : off + s * xs[d]!;
    }
    to[i] = off < 0 ? fill : from[off]!;
    for (let d = rank - 1; d >= 0; d--) {
      if (++coord[d]! < g.shape[d]!) break;
      coord[d] = 0;
    }
  }
}

export const onnxPadReference: ReferenceFn = (args, scalars) => {
  const y = new Float64Array(numel(args.y!.desc.shape));
  padInto(args.x!.desc, scalars, args.x!.values, y, padGeometry(args.x!.desc, scalars).value);
  return { y };
};

export const onnxPadCpu: CpuKernel = (args, scalars) => {
  const [x, y] = args as [CpuArg, CpuArg];
  const fill = storedValue(y.desc.dtype, padGeometry(x.desc, scalars).value);
  padInto(x.desc, scalars, x.data, y.data, fill);
};

export const onnxPadCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_pad',
  source: `${CUDA_INDEX}
extern "C" __global__ void tdm_onnx_pad(const X_t* __restrict__ x, X_t* __restrict__ y, long long n, double value,
    DIMS6(od), DIMS6(xd), DIMS6(xs), DIMS6(bg)) {
  const long long odims[6] = ARR6(od), xdims[6] = ARR6(xd), xstr[6] = ARR6(xs), begin[6] = ARR6(bg);
  ${GRID_STRIDE} {
    long long r = i, off = 0;
    bool inside = true;
    for (int k = 5; k >= 0; --k) {
      long long c = r % odims[k];
      r /= odims[k];
      long long s = c - begin[k], d = xdims[k];
      if (s < 0 || s >= d) {
#if MODE == 0
        inside = false;
#elif MODE == 1
        if (s < 0) s = -s;
        if (s >= d) s = 2 * (d - 1) - s;
#else
        s = s < 0 ? 0 : d - 1;
#endif
      }
      off += s * xstr[k];
    }
    if (inside) y[i] = x[off];
    else stX(y, i, value);
  }
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  defines: (_args, scalars) => ({
    MODE: PAD_MODES.indexOf(enumScalar('onnx_pad', scalars, 'mode', PAD_MODES, 'constant')),
  }),
  grid: (args) => elementwiseGrid(numel(args[1]!.desc.shape)),
  block: () => BLOCK_DIM,
  params: (args, scalars): CudaParam[] => {
    const x = args[0]!.desc;
    const g = padGeometry(x, scalars);
    const xp = pad6(x.shape, contiguousStrides(x.shape));
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      { kind: 'i64', value: numel(g.shape) },
      { kind: 'f64', value: g.value },
      ...i64Params(pad6(g.shape, []).dims),
      ...i64Params(xp.dims),
      ...i64Params(xp.strides),
      ...i64Params(pad6(g.shape, g.begins).strides),
    ];
  },
};
