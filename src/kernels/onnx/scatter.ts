/**
 * onnx_scatter_elements (ScatterElements) and onnx_scatter_nd (ScatterND): y (already holding a copy
 * of data) receives `updates` at the places `indices` names, replacing them or combining with
 * `reduction` add / mul / max / min. Negative indices count from the end; an out-of-range index skips
 * its update. Updates that meet in one element are applied in index order, each place by one CUDA
 * thread (a line along the axis for ScatterElements, one element of the slices for ScatterND), so
 * results are deterministic without atomics. Definitions, float64 references, CPU and CUDA.
 */
import { toNumbers, fromNumbers } from '../../core/dtype.js';
import { TandemError } from '../../core/errors.js';
import { numel } from '../../core/shape.js';
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import type { CudaParam, CudaProgram } from '../../devices/cuda/kernel-api.js';
import type { Scalars, TensorDesc } from '../../devices/device.js';
import { BLOCK_DIM, GRID_STRIDE, elementwiseGrid } from '../common/cuda.js';
import type { ReferenceFn } from '../common/reference.js';
import { enumScalar, intScalar } from '../common/scalars.js';
import { COPY_DTYPES, CUDA_INDEX, i64Params, onnxDef, pad6, requireDTypes, streamCost } from './common.js';
import { contiguousStrides, normalizeAxis, requireRank, requireShape } from './shapes.js';

export const SCATTER_REDUCTIONS = ['none', 'add', 'mul', 'max', 'min'] as const;
type Reduction = (typeof SCATTER_REDUCTIONS)[number];

const COMBINE: Record<Reduction, (a: number, b: number) => number> = {
  none: (_a, b) => b,
  add: (a, b) => a + b,
  mul: (a, b) => a * b,
  max: (a, b) => (a !== a || b !== b ? NaN : Math.max(a, b)),
  min: (a, b) => (a !== a || b !== b ? NaN : Math.min(a, b)),
};

const COMBINE_CUDA = `
#if RED == 0
#define TDM_COMBINE(a, b) (b)
#elif RED == 1
#define TDM_COMBINE(a, b) ((a) + (b))
#elif RED == 2
#define TDM_COMBINE(a, b) ((a) * (b))
#elif RED == 3
#define TDM_COMBINE(a, b) (((a) != (a) || (b) != (b)) ? (a) + (b) : ((a) > (b) ? (a) : (b)))
#else
#define TDM_COMBINE(a, b) (((a) != (a) || (b) != (b)) ? (a) + (b) : ((a) < (b) ? (a) : (b)))
#endif
// Update s applied to y[at]: replaced as stored (bits kept), or combined in the compute type.
static __device__ __forceinline__ void scatter_store(X_t* y, long long at, const X_t* upd, long long s) {
#if RED == 0
  y[at] = upd[s];
#else
  stX(y, at, TDM_COMBINE(ldX(y, at), ldX(upd, s)));
#endif
}
`;

function reductionOf(op: string, scalars: Scalars): Reduction {
  return enumScalar(op, scalars, 'reduction', SCATTER_REDUCTIONS, 'none');
}

function shapeError(op: string, message: string): TandemError {
  return new TandemError('TANDEM_ERR_SHAPE', `${op}: ${message}`, { op });
}

/** Applies `updates` into y (float64 values) at the flat places `place(i)` gives (−1: skipped), in order. */
function scatterValues(
  y: Float64Array,
  updates: ArrayLike<number>,
  n: number,
  place: (i: number) => number,
  r: Reduction,
) {
  const f = COMBINE[r];
  for (let i = 0; i < n; i++) {
    const at = place(i);
    if (at >= 0) y[at] = f(y[at]!, updates[i]!);
  }
}

// ---- scatter_elements

export function scatterElementsGeometry(y: TensorDesc, indices: TensorDesc, scalars: Scalars) {
  const name = 'onnx_scatter_elements';
  requireRank(name, 'y', y.shape, 1);
  const rank = y.shape.length;
  const axis = normalizeAxis(name, intScalar(name, scalars, 'axis', 0), rank);
  if (indices.shape.length !== rank || indices.shape.some((d, i) => i !== axis && d > y.shape[i]!))
    throw shapeError(
      name,
      `indices [${indices.shape.join(',')}] must have y's rank and fit y [${y.shape.join(',')}] off axis ${axis}`,
    );
  const lineDims = indices.shape.map((d, i) => (i === axis ? 1 : d));
  return {
    axis,
    dim: y.shape[axis]!,
    count: indices.shape[axis]!,
    yStrides: contiguousStrides(y.shape),
    lineDims,
  };
}

export const onnxScatterElementsDef = onnxDef(
  'onnx_scatter_elements',
  [
    ['indices', 'r'],
    ['updates', 'r'],
    ['y', 'rw'],
  ],
  ['axis', 'reduction'],
  (args, scalars) => {
    reductionOf('onnx_scatter_elements', scalars);
    requireDTypes('onnx_scatter_elements', args, ['updates', 'y'], COPY_DTYPES);
    requireDTypes('onnx_scatter_elements', args, ['indices'], ['i32']);
    scatterElementsGeometry(args.y!, args.indices!, scalars);
    requireShape('onnx_scatter_elements', 'updates', args.updates!.shape, args.indices!.shape);
  },
  (args) => streamCost(args, 1, 'updates'),
);

function elementsPlace(y: TensorDesc, indices: TensorDesc, scalars: Scalars, idx: ArrayLike<number>) {
  const g = scatterElementsGeometry(y, indices, scalars);
  const is = contiguousStrides(indices.shape);
  return (i: number) => {
    const raw = idx[i]!;
    const k = raw < 0 ? raw + g.dim : raw;
    if (k < 0 || k >= g.dim) return -1;
    let off = 0;
    for (let d = 0; d < is.length; d++) {
      const c = Math.floor(i / is[d]!) % indices.shape[d]!;
      off += (d === g.axis ? k : c) * g.yStrides[d]!;
    }
    return off;
  };
}

export const onnxScatterElementsReference: ReferenceFn = (args, scalars) => {
  const [y, indices, updates] = [args.y!, args.indices!, args.updates!];
  const out = Float64Array.from(y.values);
  const place = elementsPlace(y.desc, indices.desc, scalars, indices.values);
  scatterValues(
    out,
    updates.values,
    updates.values.length,
    place,
    reductionOf('onnx_scatter_elements', scalars),
  );
  return { y: out };
};

export const onnxScatterElementsCpu: CpuKernel = (args, scalars) => {
  const [indices, updates, y] = args as [CpuArg, CpuArg, CpuArg];
  const out = toNumbers(y.desc.dtype, y.data);
  const place = elementsPlace(y.desc, indices.desc, scalars, indices.data);
  const u = toNumbers(updates.desc.dtype, updates.data);
  scatterValues(out, u, u.length, place, reductionOf('onnx_scatter_elements', scalars));
  fromNumbers(y.desc.dtype, out, y.data);
};

export const onnxScatterElementsCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_scatter_elements',
  source: `${CUDA_INDEX}${COMBINE_CUDA}
extern "C" __global__ void tdm_onnx_scatter_elements(const int* __restrict__ idx, const X_t* __restrict__ upd,
    X_t* __restrict__ y, long long n, long long axis, long long dim, long long count, DIMS6(ld), DIMS6(is),
    DIMS6(ys)) {
  const long long ldims[6] = ARR6(ld), istr[6] = ARR6(is), ystr[6] = ARR6(ys);
  ${GRID_STRIDE} {
    // Line i: its coordinates off the axis, then the updates along it in order.
    long long r = i, ibase = 0, ybase = 0;
    for (int a = 5; a >= 0; --a) {
      long long c = r % ldims[a];
      r /= ldims[a];
      ibase += c * istr[a];
      ybase += c * ystr[a];
    }
    for (long long t = 0; t < count; ++t) {
      long long s = ibase + t * istr[axis];
      long long k = idx[s];
      if (k < 0) k += dim;
      if (k < 0 || k >= dim) continue;
      scatter_store(y, ybase + k * ystr[axis], upd, s);
    }
  }
}`,
  dtypes: (args) => ({ X: args[2]!.desc.dtype }),
  defines: (_args, scalars) => ({
    RED: SCATTER_REDUCTIONS.indexOf(reductionOf('onnx_scatter_elements', scalars)),
  }),
  grid: (args, scalars) =>
    elementwiseGrid(numel(scatterElementsGeometry(args[2]!.desc, args[0]!.desc, scalars).lineDims)),
  block: () => BLOCK_DIM,
  params: (args, scalars): CudaParam[] => {
    const [indices, y] = [args[0]!.desc, args[2]!.desc];
    const g = scatterElementsGeometry(y, indices, scalars);
    const lead = 6 - y.shape.length;
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      { kind: 'ptr', arg: 2 },
      ...i64Params([numel(g.lineDims), g.axis + lead, g.dim, g.count]),
      ...i64Params(pad6(g.lineDims, []).dims),
      ...i64Params(pad6(indices.shape, contiguousStrides(indices.shape)).strides),
      ...i64Params(pad6(y.shape, g.yStrides).strides),
    ];
  },
};

// ---- scatter_nd

export function scatterNdGeometry(y: TensorDesc, indices: TensorDesc, updates: TensorDesc) {
  const name = 'onnx_scatter_nd';
  requireRank(name, 'y', y.shape, 1);
  requireRank(name, 'indices', indices.shape, 1);
  const q = indices.shape.length;
  const m = indices.shape[q - 1]!;
  if (m < 1 || m > y.shape.length)
    throw shapeError(name, `index rows of ${m} do not fit y's rank ${y.shape.length}`);
  const want = [...indices.shape.slice(0, q - 1), ...y.shape.slice(m)];
  requireShape(name, 'updates', updates.shape, want);
  return {
    m,
    rows: numel(indices.shape.slice(0, q - 1)),
    slice: numel(y.shape.slice(m)),
    dims: y.shape.slice(0, m),
    strides: contiguousStrides(y.shape).slice(0, m),
  };
}

export const onnxScatterNdDef = onnxDef(
  'onnx_scatter_nd',
  [
    ['indices', 'r'],
    ['updates', 'r'],
    ['y', 'rw'],
  ],
  ['reduction'],
  (args, scalars) => {
    reductionOf('onnx_scatter_nd', scalars);
    requireDTypes('onnx_scatter_nd', args, ['updates', 'y'], COPY_DTYPES);
    requireDTypes('onnx_scatter_nd', args, ['indices'], ['i32']);
    scatterNdGeometry(args.y!, args.indices!, args.updates!);
  },
  (args) => streamCost(args, 1, 'updates'),
);

function ndPlace(g: ReturnType<typeof scatterNdGeometry>, idx: ArrayLike<number>) {
  return (i: number) => {
    const r = Math.floor(i / g.slice);
    let off = 0;
    for (let j = 0; j < g.m; j++) {
      const raw = idx[r * g.m + j]!;
      const k = raw < 0 ? raw + g.dims[j]! : raw;
      if (k < 0 || k >= g.dims[j]!) return -1;
      off += k * g.strides[j]!;
    }
    return off + (i % g.slice);
  };
}

export const onnxScatterNdReference: ReferenceFn = (args, scalars) => {
  const [y, indices, updates] = [args.y!, args.indices!, args.updates!];
  const g = scatterNdGeometry(y.desc, indices.desc, updates.desc);
  const out = Float64Array.from(y.values);
  scatterValues(
    out,
    updates.values,
    g.rows * g.slice,
    ndPlace(g, indices.values),
    reductionOf('onnx_scatter_nd', scalars),
  );
  return { y: out };
};

export const onnxScatterNdCpu: CpuKernel = (args, scalars) => {
  const [indices, updates, y] = args as [CpuArg, CpuArg, CpuArg];
  const g = scatterNdGeometry(y.desc, indices.desc, updates.desc);
  const out = toNumbers(y.desc.dtype, y.data);
  const u = toNumbers(updates.desc.dtype, updates.data);
  scatterValues(out, u, g.rows * g.slice, ndPlace(g, indices.data), reductionOf('onnx_scatter_nd', scalars));
  fromNumbers(y.desc.dtype, out, y.data);
};

export const onnxScatterNdCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_scatter_nd',
  source: `${CUDA_INDEX}${COMBINE_CUDA}
extern "C" __global__ void tdm_onnx_scatter_nd(const int* __restrict__ idx, const X_t* __restrict__ upd,
    X_t* __restrict__ y, long long n, long long m, long long rows, DIMS6(dd), DIMS6(ds)) {
  const long long dims[6] = ARR6(dd), str[6] = ARR6(ds);
  // Element i of every slice: the rows in order (two slices' elements i never meet another i's).
  ${GRID_STRIDE} {
    for (long long r = 0; r < rows; ++r) {
      long long off = 0;
      for (long long j = 0; j < m && off >= 0; ++j) {
        long long k = idx[r * m + j];
        if (k < 0) k += dims[j];
        off = k >= 0 && k < dims[j] ? off + k * str[j] : -1;
      }
      if (off < 0) continue;
      scatter_store(y, off + i, upd, r * n + i);
    }
  }
}`,
  dtypes: (args) => ({ X: args[2]!.desc.dtype }),
  defines: (_args, scalars) => ({ RED: SCATTER_REDUCTIONS.indexOf(reductionOf('onnx_scatter_nd', scalars)) }),
  grid: (args) => elementwiseGrid(scatterNdGeometry(args[2]!.desc, args[0]!.desc, args[1]!.desc).slice),
  block: () => BLOCK_DIM,
  params: (args): CudaParam[] => {
    const g = scatterNdGeometry(args[2]!.desc, args[0]!.desc, args[1]!.desc);
    const pad = (v: number[]) => [...v, ...new Array<number>(6 - v.length).fill(1)];
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      { kind: 'ptr', arg: 2 },
      ...i64Params([g.slice, g.m, g.rows]),
      ...i64Params(pad(g.dims)),
      ...i64Params(pad(g.strides)),
    ];
  },
};
