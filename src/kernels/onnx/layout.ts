/**
 * Data movement: onnx_transpose, onnx_slice, onnx_concat and onnx_expand (strided copies, strided.ts),
 * onnx_gather and onnx_pad. Elements are copied as stored, so they take every dtype. Definitions and
 * float64 references (written per element from the ONNX definitions, independently of the plans).
 */
import { TandemError } from '../../core/errors.js';
import { numel } from '../../core/shape.js';
import type { Scalars, TensorDesc } from '../../devices/device.js';
import type { ReferenceFn } from '../common/reference.js';
import { intScalar } from '../common/scalars.js';
import { COPY_DTYPES, onnxDef, requireDTypes, streamCost } from './common.js';
import {
  broadcastShape,
  broadcastStrides,
  contiguousStrides,
  intList,
  normalizeAxis,
  requireRank,
  requireShape,
  sliceGeometry,
} from './shapes.js';
import type { StridedPlan } from './strided.js';

const XY = [
  ['x', 'r'],
  ['y', 'w'],
] as const;

/** The coordinates of flat index i in `shape`. */
export function coordsOf(i: number, shape: readonly number[]): number[] {
  const out = new Array<number>(shape.length);
  for (let d = shape.length - 1; d >= 0; d--) {
    out[d] = i % shape[d]!;
    i = Math.floor(i / shape[d]!);
  }
  return out;
}

export function flatIndex(coords: readonly number[], shape: readonly number[]): number {
  let i = 0;
  coords.forEach((c, d) => (i = i * shape[d]! + c));
  return i;
}

// ---- transpose

export function permOf(x: TensorDesc, scalars: Scalars): number[] {
  const rank = x.shape.length;
  const perm = intList('onnx_transpose', scalars, 'perm', [...Array(rank).keys()].reverse());
  const sorted = [...perm].sort((a, b) => a - b);
  if (perm.length !== rank || sorted.some((v, i) => v !== i)) {
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `onnx_transpose: perm "${perm.join(',')}" is not a permutation of 0..${rank - 1}`,
      {
        op: 'onnx_transpose',
        scalar: 'perm',
      },
    );
  }
  return perm;
}

export const transposePlan = (x: TensorDesc, y: TensorDesc, scalars: Scalars): StridedPlan => {
  const xs = contiguousStrides(x.shape);
  const perm = permOf(x, scalars);
  return {
    shape: y.shape,
    srcStrides: perm.map((p) => xs[p]!),
    srcBase: 0,
    dstStrides: contiguousStrides(y.shape),
    dstBase: 0,
  };
};

export const onnxTransposeDef = onnxDef(
  'onnx_transpose',
  XY,
  ['perm'],
  (args, scalars) => {
    requireDTypes('onnx_transpose', args, ['x', 'y'], COPY_DTYPES);
    requireRank('onnx_transpose', 'x', args.x!.shape, 0);
    const perm = permOf(args.x!, scalars);
    requireShape(
      'onnx_transpose',
      'y',
      args.y!.shape,
      perm.map((p) => args.x!.shape[p]!),
    );
  },
  (args) => streamCost(args, 0),
);

export const onnxTransposeReference: ReferenceFn = (args, scalars) => {
  const perm = permOf(args.x!.desc, scalars);
  const ys = args.y!.desc.shape;
  const y = new Float64Array(numel(ys)).map((_, i) => {
    const yc = coordsOf(i, ys);
    const xc = new Array<number>(perm.length);
    perm.forEach((p, d) => (xc[p] = yc[d]!));
    return args.x!.values[flatIndex(xc, args.x!.desc.shape)]!;
  });
  return { y };
};

// ---- slice

export const slicePlan = (x: TensorDesc, y: TensorDesc, scalars: Scalars): StridedPlan => {
  const g = sliceGeometry('onnx_slice', x.shape, scalars);
  const xs = contiguousStrides(x.shape);
  return {
    shape: y.shape,
    srcStrides: xs.map((s, d) => s * g.steps[d]!),
    srcBase: xs.reduce((acc, s, d) => acc + s * g.starts[d]!, 0),
    dstStrides: contiguousStrides(y.shape),
    dstBase: 0,
  };
};

export const onnxSliceDef = onnxDef(
  'onnx_slice',
  XY,
  ['starts', 'ends', 'axes', 'steps'],
  (args, scalars) => {
    requireDTypes('onnx_slice', args, ['x', 'y'], COPY_DTYPES);
    requireRank('onnx_slice', 'x', args.x!.shape, 1);
    requireShape('onnx_slice', 'y', args.y!.shape, sliceGeometry('onnx_slice', args.x!.shape, scalars).shape);
  },
  (args) => streamCost(args, 0),
);

export const onnxSliceReference: ReferenceFn = (args, scalars) => {
  const g = sliceGeometry('onnx_slice', args.x!.desc.shape, scalars);
  const y = new Float64Array(numel(g.shape)).map((_, i) => {
    const xc = coordsOf(i, g.shape).map((c, d) => g.starts[d]! + c * g.steps[d]!);
    return args.x!.values[flatIndex(xc, args.x!.desc.shape)]!;
  });
  return { y };
};

// ---- concat (one input per task into y, at `offset` along `axis`)

function concatPlace(x: TensorDesc, y: TensorDesc, scalars: Scalars): { axis: number; offset: number } {
  const axis = normalizeAxis('onnx_concat', intScalar('onnx_concat', scalars, 'axis'), y.shape.length);
  const offset = intScalar('onnx_concat', scalars, 'offset', 0);
  const fits =
    x.shape.length === y.shape.length &&
    x.shape.every((d, i) => (i === axis ? offset >= 0 && offset + d <= y.shape[i]! : d === y.shape[i]));
  if (!fits) {
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `onnx_concat: x [${x.shape.join(',')}] does not fit y [${y.shape.join(',')}] at offset ${offset} of axis ${axis}`,
      {
        op: 'onnx_concat',
      },
    );
  }
  return { axis, offset };
}

export const concatPlan = (x: TensorDesc, y: TensorDesc, scalars: Scalars): StridedPlan => {
  const { axis, offset } = concatPlace(x, y, scalars);
  const ys = contiguousStrides(y.shape);
  return {
    shape: x.shape,
    srcStrides: contiguousStrides(x.shape),
    srcBase: 0,
    dstStrides: ys,
    dstBase: offset * ys[axis]!,
  };
};

export const onnxConcatDef = onnxDef(
  'onnx_concat',
  [
    ['x', 'r'],
    ['y', 'rw'],
  ],
  ['axis', 'offset'],
  (args, scalars) => {
    requireDTypes('onnx_concat', args, ['x', 'y'], COPY_DTYPES);
    requireRank('onnx_concat', 'y', args.y!.shape, 1);
    concatPlace(args.x!, args.y!, scalars);
  },
  (args) => ({ flops: 0, bytes: 2 * args.x!.bytes }),
);

export const onnxConcatReference: ReferenceFn = (args, scalars) => {
  const { axis, offset } = concatPlace(args.x!.desc, args.y!.desc, scalars);
  const y = Float64Array.from(args.y!.values);
  args.x!.values.forEach((v, i) => {
    const c = coordsOf(i, args.x!.desc.shape);
    c[axis]! += offset;
    y[flatIndex(c, args.y!.desc.shape)] = v;
  });
  return { y };
};

// ---- expand

export const expandPlan = (x: TensorDesc, y: TensorDesc): StridedPlan => ({
  shape: y.shape,
  srcStrides: broadcastStrides(x.shape, y.shape),
  srcBase: 0,
  dstStrides: contiguousStrides(y.shape),
  dstBase: 0,
});

export const onnxExpandDef = onnxDef(
  'onnx_expand',
  XY,
  [],
  (args) => {
    requireDTypes('onnx_expand', args, ['x', 'y'], COPY_DTYPES);
    requireRank('onnx_expand', 'y', args.y!.shape, 0);
    requireShape(
      'onnx_expand',
      'y',
      args.y!.shape,
      broadcastShape('onnx_expand', args.x!.shape, args.y!.shape),
    );
  },
  (args) => streamCost(args, 0),
);

export const onnxExpandReference: ReferenceFn = (args) => {
  const [xs, ys] = [args.x!.desc.shape, args.y!.desc.shape];
  const lead = ys.length - xs.length;
  const y = new Float64Array(numel(ys)).map((_, i) => {
    const xc = coordsOf(i, ys)
      .slice(lead)
      .map((c, d) => (xs[d] === 1 ? 0 : c));
    return args.x!.values[flatIndex(xc, xs)]!;
  });
  return { y };
};
