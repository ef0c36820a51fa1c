/**
 * onnx_hardmax (Hardmax along one axis: 1 at the first maximum of each line, 0 elsewhere; a NaN counts
 * as the maximum, as numpy's argmax) and onnx_onehot (OneHot: `depth` positions inserted at `axis`,
 * `on` where the index, truncated toward zero and counted from the end when negative, names the
 * position, `off` elsewhere and everywhere for an index out of range): definitions, float64 references,
 * CPU and CUDA.
 */
import { TandemError } from '../../core/errors.js';
import { numel } from '../../core/shape.js';
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import type { CudaParam, CudaProgram } from '../../devices/cuda/kernel-api.js';
import type { Scalars, TensorDesc } from '../../devices/device.js';
import { floatCopyOf } from '../common/cpu-float.js';
import { BLOCK_DIM, GRID_STRIDE, elementwiseGrid } from '../common/cuda.js';
import type { ReferenceFn } from '../common/reference.js';
import { intScalar, numberScalar } from '../common/scalars.js';
import { COPY_DTYPES, FLOAT_DTYPES, i64Params, onnxDef, requireDTypes, streamCost } from './common.js';
import { storedValue } from './gather-pad.js';
import { MAX_RANK, normalizeAxis, requireRank, requireShape } from './shapes.js';

// ---- hardmax

/** Lines along `axis` [−1]: outer × inner lines of dim elements. */
export function hardmaxGeometry(x: Pick<TensorDesc, 'shape'>, scalars: Scalars) {
  requireRank('onnx_hardmax', 'x', x.shape, 1);
  const axis = normalizeAxis('onnx_hardmax', intScalar('onnx_hardmax', scalars, 'axis', -1), x.shape.length);
  return {
    outer: numel(x.shape.slice(0, axis)),
    dim: x.shape[axis]!,
    inner: numel(x.shape.slice(axis + 1)),
  };
}

export const onnxHardmaxDef = onnxDef(
  'onnx_hardmax',
  [
    ['x', 'r'],
    ['y', 'w'],
  ],
  ['axis'],
  (args, scalars) => {
    requireDTypes('onnx_hardmax', args, ['x', 'y'], FLOAT_DTYPES);
    hardmaxGeometry(args.x!, scalars);
    requireShape('onnx_hardmax', 'y', args.y!.shape, args.x!.shape);
  },
  (args) => streamCost(args, 1),
);

function hardmaxInto(x: TensorDesc, scalars: Scalars, from: ArrayLike<number>, to: { [i: number]: number }) {
  const g = hardmaxGeometry(x, scalars);
  for (let o = 0; o < g.outer; o++)
    for (let i = 0; i < g.inner; i++) {
      const base = o * g.dim * g.inner + i;
      let best = from[base]!;
      let at = 0;
      for (let k = 1; k < g.dim && best === best; k++) {
        const v = from[base + k * g.inner]!;
        if (v !== v || v > best) {
          best = v;
          at = k;
        }
      }
      for (let k = 0; k < g.dim; k++) to[base + k * g.inner] = k === at ? 1 : 0;
    }
}

export const onnxHardmaxReference: ReferenceFn = (args, scalars) => {
  const y = new Float64Array(numel(args.x!.desc.shape));
  hardmaxInto(args.x!.desc, scalars, args.x!.values, y);
  return { y };
};

export const onnxHardmaxCpu: CpuKernel = (args, scalars) => {
  const [x, y] = args as [CpuArg, CpuArg];
  const ones = new Float64Array(numel(x.desc.shape));
  hardmaxInto(x.desc, scalars, floatCopyOf(x), ones);
  const [one, zero] = [storedValue(y.desc.dtype, 1), storedValue(y.desc.dtype, 0)];
  for (let i = 0; i < ones.length; i++) y.data[i] = ones[i] === 1 ? one : zero;
};

export const onnxHardmaxCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_hardmax',
  source: `
extern "C" __global__ void tdm_onnx_hardmax(const X_t* __restrict__ x, X_t* __restrict__ y, long long n,
    long long dim, long long inner) {
  ${GRID_STRIDE} {
    long long in = i % inner, o = i / inner, base = o * dim * inner + in;
    X_c best = ldX(x, base);
    long long at = 0;
    for (long long k = 1; k < dim && best == best; ++k) {
      X_c v = ldX(x, base + k * inner);
      if (v != v || v > best) {
        best = v;
        at = k;
      }
    }
    for (long long k = 0; k < dim; ++k) stX(y, base + k * inner, k == at ? 1.0 : 0.0);
  }
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  grid: (args, scalars) => {
    const g = hardmaxGeometry(args[0]!.desc, scalars);
    return elementwiseGrid(g.outer * g.inner);
  },
  block: () => BLOCK_DIM,
  params: (args, scalars): CudaParam[] => {
    const g = hardmaxGeometry(args[0]!.desc, scalars);
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      ...i64Params([g.outer * g.inner, g.dim, g.inner]),
    ];
  },
};

// ---- onehot

/** y's shape: indices' with `depth` inserted at `axis` (−1 appends); outer/inner split indices there. */
export function onehotGeometry(indices: Pick<TensorDesc, 'shape'>, scalars: Scalars) {
  const name = 'onnx_onehot';
  requireRank(name, 'indices', indices.shape, 0, MAX_RANK - 1);
  const depth = intScalar(name, scalars, 'depth');
  if (depth < 1 || depth > 2 ** 31 - 1) {
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `${name}: scalar "depth" must be ≥ 1, got ${depth}`,
      {
        op: name,
        scalar: 'depth',
      },
    );
  }
  const r = indices.shape.length;
  const axis = normalizeAxis(name, intScalar(name, scalars, 'axis', -1), r + 1);
  return {
    depth,
    shape: [...indices.shape.slice(0, axis), depth, ...indices.shape.slice(axis)],
    inner: numel(indices.shape.slice(axis)),
    on: numberScalar(name, scalars, 'on', 1),
    off: numberScalar(name, scalars, 'off', 0),
  };
}

export const onnxOnehotDef = onnxDef(
  'onnx_onehot',
  [
    ['indices', 'r'],
    ['y', 'w'],
  ],
  ['depth', 'axis', 'on', 'off'],
  (args, scalars) => {
    requireDTypes('onnx_onehot', args, ['indices'], COPY_DTYPES);
    requireDTypes('onnx_onehot', args, ['y'], COPY_DTYPES);
    requireShape('onnx_onehot', 'y', args.y!.shape, onehotGeometry(args.indices!, scalars).shape);
  },
  (args) => streamCost(args, 1),
);

function onehotInto(
  indices: TensorDesc,
  scalars: Scalars,
  idx: ArrayLike<number>,
  to: { [i: number]: number },
  on: number,
  off: number,
) {
  const g = onehotGeometry(indices, scalars);
  const n = numel(g.shape);
  for (let i = 0; i < n; i++) {
    const inn = i % g.inner;
    const j = Math.floor(i / g.inner) % g.depth;
    const o = Math.floor(i / (g.inner * g.depth));
    let k = Math.trunc(idx[o * g.inner + inn]!);
    if (k < 0) k += g.depth;
    to[i] = k === j ? on : off;
  }
}

export const onnxOnehotReference: ReferenceFn = (args, scalars) => {
  const g = onehotGeometry(args.indices!.desc, scalars);
  const y = new Float64Array(numel(g.shape));
  onehotInto(args.indices!.desc, scalars, args.indices!.values, y, g.on, g.off);
  return { y };
};

export const onnxOnehotCpu: CpuKernel = (args, scalars) => {
  const [indices, y] = args as [CpuArg, CpuArg];
  const g = onehotGeometry(indices.desc, scalars);
  const [on, off] = [storedValue(y.desc.dtype, g.on), storedValue(y.desc.dtype, g.off)];
  onehotInto(indices.desc, scalars, floatCopyOf(indices), y.data, on, off);
};

export const onnxOnehotCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_onehot',
  source: `
extern "C" __global__ void tdm_onnx_onehot(const I_t* __restrict__ idx, Y_t* __restrict__ y, long long n,
    long long depth, long long inner, double on, double off) {
  ${GRID_STRIDE} {
    long long in = i % inner, j = (i / inner) % depth, o = i / (inner * depth);
    double v = (double)ldI(idx, o * inner + in);
    // Truncated toward zero; a NaN or huge index matches no position.
    long long k = v != v || v >= 9.2e18 || v <= -9.2e18 ? -1 - depth : (long long)v;
    if (k < 0) k += depth;
    stY(y, i, k == j ? on : off);
  }
}`,
  dtypes: (args) => ({ I: args[0]!.desc.dtype, Y: args[1]!.desc.dtype }),
  grid: (args) => elementwiseGrid(numel(args[1]!.desc.shape)),
  block: () => BLOCK_DIM,
  params: (args, scalars): CudaParam[] => {
    const g = onehotGeometry(args[0]!.desc, scalars);
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      ...i64Params([numel(g.shape), g.depth, g.inner]),
      { kind: 'f64', value: g.on },
      { kind: 'f64', value: g.off },
    ];
  },
};
