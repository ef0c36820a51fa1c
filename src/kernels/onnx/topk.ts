/**
 * onnx_topk (TopK): the k largest (or smallest) elements of each line along an axis, in order, with
 * their i32 indices. Equal values keep the lower index first (ONNX's rule); NaN ranks above every
 * number (numpy's sort order), so it comes first among the largest and last among the smallest.
 * Definition, float64 reference, CPU (a sort per line) and CUDA (one thread per line, k selection
 * passes over the line: O(k·n), no scratch).
 */
import { TandemError } from '../../core/errors.js';
import { numel } from '../../core/shape.js';
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import type { CudaParam, CudaProgram } from '../../devices/cuda/kernel-api.js';
import type { Scalars, TensorDesc } from '../../devices/device.js';
import { floatCopyOf } from '../common/cpu-float.js';
import { BLOCK_DIM, GRID_STRIDE, elementwiseGrid } from '../common/cuda.js';
import type { ReferenceFn } from '../common/reference.js';
import { boolScalar, intScalar } from '../common/scalars.js';
import { COPY_DTYPES, i64Params, onnxDef, requireDTypes, streamCost } from './common.js';
import { normalizeAxis, requireRank, requireShape } from './shapes.js';

export function topkGeometry(x: Pick<TensorDesc, 'shape'>, scalars: Scalars) {
  const name = 'onnx_topk';
  requireRank(name, 'x', x.shape, 1);
  const axis = normalizeAxis(name, intScalar(name, scalars, 'axis', -1), x.shape.length);
  const k = intScalar(name, scalars, 'k');
  const dim = x.shape[axis]!;
  if (k < 0 || k > dim) {
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `${name}: scalar "k" ${k} must be in [0, ${dim}]`, {
      op: name,
      scalar: 'k',
    });
  }
  return {
    k,
    largest: boolScalar(name, scalars, 'largest', true),
    shape: x.shape.map((d, i) => (i === axis ? k : d)),
    outer: numel(x.shape.slice(0, axis)),
    dim,
    inner: numel(x.shape.slice(axis + 1)),
  };
}

export const onnxTopkDef = onnxDef(
  'onnx_topk',
  [
    ['x', 'r'],
    ['values', 'w'],
    ['indices', 'w'],
  ],
  ['k', 'axis', 'largest'],
  (args, scalars) => {
    requireDTypes('onnx_topk', args, ['x', 'values'], COPY_DTYPES);
    requireDTypes('onnx_topk', args, ['indices'], ['i32']);
    const g = topkGeometry(args.x!, scalars);
    requireShape('onnx_topk', 'values', args.values!.shape, g.shape);
    requireShape('onnx_topk', 'indices', args.indices!.shape, g.shape);
  },
  (args, scalars) => {
    const g = topkGeometry(args.x!, scalars);
    return { ...streamCost(args, 0, 'values'), flops: g.outer * g.inner * g.k * g.dim };
  },
);

/** Whether (a, i) comes before (b, j) in the result's order. */
function before(largest: boolean, a: number, i: number, b: number, j: number): boolean {
  const an = a !== a;
  const bn = b !== b;
  if (an || bn) return an && bn ? i < j : largest ? an : bn;
  if (a !== b) return largest ? a > b : a < b;
  return i < j;
}

function topkInto(
  x: TensorDesc,
  scalars: Scalars,
  from: ArrayLike<number>,
  values: { [i: number]: number },
  indices: { [i: number]: number },
  raw: ArrayLike<number> = from,
): void {
  const g = topkGeometry(x, scalars);
  const order = new Array<number>(g.dim);
  for (let o = 0; o < g.outer; o++)
    for (let i = 0; i < g.inner; i++) {
      const base = o * g.dim * g.inner + i;
      for (let j = 0; j < g.dim; j++) order[j] = j;
      const at = (j: number) => from[base + j * g.inner]!;
      order.sort((p, q) => (before(g.largest, at(p), p, at(q), q) ? -1 : 1));
      for (let j = 0; j < g.k; j++) {
        const out = (o * g.k + j) * g.inner + i;
        values[out] = raw[base + order[j]! * g.inner]!;
        indices[out] = order[j]!;
      }
    }
}

export const onnxTopkReference: ReferenceFn = (args, scalars) => {
  const n = numel(args.values!.desc.shape);
  const [values, indices] = [new Float64Array(n), new Float64Array(n)];
  topkInto(args.x!.desc, scalars, args.x!.values, values, indices);
  return { values, indices };
};

/** Values are copied as stored (raw words), ranked by their decoded numbers. */
export const onnxTopkCpu: CpuKernel = (args, scalars) => {
  const [x, values, indices] = args as [CpuArg, CpuArg, CpuArg];
  topkInto(x.desc, scalars, floatCopyOf(x), values.data, indices.data, x.data);
};

export const onnxTopkCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_topk',
  source: `
static __device__ __forceinline__ bool tdm_before(X_c a, long long i, X_c b, long long j) {
  bool an = a != a, bn = b != b;
  if (an || bn) return an && bn ? i < j : (LARGEST ? an : bn);
  if (a != b) return LARGEST ? a > b : a < b;
  return i < j;
}
extern "C" __global__ void tdm_onnx_topk(const X_t* __restrict__ x, X_t* __restrict__ values,
    int* __restrict__ indices, long long n, long long dim, long long inner, long long k) {
  ${GRID_STRIDE} {
    long long in = i % inner, o = i / inner, base = o * dim * inner + in;
    X_c pv = (X_c)0;
    long long pi = -1;
    for (long long r = 0; r < k; ++r) {
      // The first element in order after the previous pick (pi, pv).
      X_c bv = (X_c)0;
      long long bi = -1;
      for (long long j = 0; j < dim; ++j) {
        X_c v = ldX(x, base + j * inner);
        if (pi >= 0 && !tdm_before(pv, pi, v, j)) continue;
        if (bi < 0 || tdm_before(v, j, bv, bi)) {
          bv = v;
          bi = j;
        }
      }
      long long out = (o * k + r) * inner + in;
      values[out] = x[base + bi * inner];
      indices[out] = (int)bi;
      pv = bv;
      pi = bi;
    }
  }
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  defines: (args, scalars) => ({ LARGEST: topkGeometry(args[0]!.desc, scalars).largest ? 1 : 0 }),
  grid: (args, scalars) => {
    const g = topkGeometry(args[0]!.desc, scalars);
    return elementwiseGrid(g.outer * g.inner);
  },
  block: () => BLOCK_DIM,
  params: (args, scalars): CudaParam[] => {
    const g = topkGeometry(args[0]!.desc, scalars);
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      { kind: 'ptr', arg: 2 },
      ...i64Params([g.outer * g.inner, g.dim, g.inner, g.k]),
    ];
  },
};
