/**
 * Kernels with bool results (u8 0/1, the executor's bool on device): onnx_compare (Equal, Less,
 * LessOrEqual, Greater, GreaterOrEqual, And, Or, Xor with numpy broadcasting) and onnx_isinf (IsInf,
 * IsNaN). Definitions, float64 references, CPU and CUDA. Comparisons with NaN are false (Equal too);
 * And/Or/Xor read any nonzero value as true.
 */
import { numel } from '../../core/shape.js';
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import type { CudaProgram } from '../../devices/cuda/kernel-api.js';
import type { Scalars } from '../../devices/device.js';
import { floatCopyOf } from '../common/cpu-float.js';
import { BLOCK_DIM, GRID_STRIDE, count, elementwiseGrid } from '../common/cuda.js';
import type { ReferenceFn } from '../common/reference.js';
import { boolScalar, enumScalar } from '../common/scalars.js';
import {
  COPY_DTYPES,
  CUDA_INDEX,
  FLOAT_DTYPES,
  forEachRow,
  i64Params,
  idx32,
  onnxDef,
  pad6,
  requireDTypes,
  streamCost,
} from './common.js';
import { broadcastShape, broadcastStrides, requireRank, requireShape } from './shapes.js';

export const COMPARE_OPS = [
  'equal',
  'less',
  'less_equal',
  'greater',
  'greater_equal',
  'and',
  'or',
  'xor',
] as const;
export type CompareOp = (typeof COMPARE_OPS)[number];

export const COMPARE_FUNCS: Record<CompareOp, (a: number, b: number) => boolean> = {
  equal: (a, b) => a === b,
  less: (a, b) => a < b,
  less_equal: (a, b) => a <= b,
  greater: (a, b) => a > b,
  greater_equal: (a, b) => a >= b,
  and: (a, b) => a !== 0 && b !== 0,
  or: (a, b) => a !== 0 || b !== 0,
  xor: (a, b) => (a !== 0) !== (b !== 0),
};

const COMPARE_CUDA: Record<CompareOp, string> = {
  equal: 'p == q',
  less: 'p < q',
  less_equal: 'p <= q',
  greater: 'p > q',
  greater_equal: 'p >= q',
  and: 'p != (X_c)0 && q != (X_c)0',
  or: 'p != (X_c)0 || q != (X_c)0',
  xor: '(p != (X_c)0) != (q != (X_c)0)',
};

export const onnxCompareDef = onnxDef(
  'onnx_compare',
  [
    ['a', 'r'],
    ['b', 'r'],
    ['c', 'w'],
  ],
  ['op'],
  (args, scalars) => {
    enumScalar('onnx_compare', scalars, 'op', COMPARE_OPS);
    requireDTypes('onnx_compare', args, ['a', 'b'], COPY_DTYPES);
    requireDTypes('onnx_compare', args, ['c'], ['u8']);
    for (const n of ['a', 'b', 'c']) requireRank('onnx_compare', n, args[n]!.shape, 0);
    requireShape(
      'onnx_compare',
      'c',
      args.c!.shape,
      broadcastShape('onnx_compare', args.a!.shape, args.b!.shape),
    );
  },
  (args) => streamCost(args, 1, 'c'),
);

function compareInto(
  f: (a: number, b: number) => boolean,
  a: { shape: readonly number[]; values: ArrayLike<number> },
  b: { shape: readonly number[]; values: ArrayLike<number> },
  shape: readonly number[],
  out: { [i: number]: number },
): void {
  const [sa, sb] = [broadcastStrides(a.shape, shape), broadcastStrides(b.shape, shape)];
  const last = shape.length - 1;
  const inner = last < 0 ? 1 : shape[last]!;
  const [ja, jb] = last < 0 ? [0, 0] : [sa[last]!, sb[last]!];
  forEachRow(shape, [sa, sb], [0, 0], ([oa, ob], row) => {
    const base = row * inner;
    for (let j = 0; j < inner; j++)
      out[base + j] = f(a.values[oa! + j * ja]!, b.values[ob! + j * jb]!) ? 1 : 0;
  });
}

export const onnxCompareReference: ReferenceFn = (args, scalars) => {
  const f = COMPARE_FUNCS[enumScalar('onnx_compare', scalars, 'op', COMPARE_OPS)];
  const [a, b, c] = [args.a!, args.b!, args.c!];
  const out = new Float64Array(numel(c.desc.shape));
  compareInto(
    f,
    { shape: a.desc.shape, values: a.values },
    { shape: b.desc.shape, values: b.values },
    c.desc.shape,
    out,
  );
  return { c: out };
};

export const onnxCompareCpu: CpuKernel = (args, scalars) => {
  const [a, b, c] = args as [CpuArg, CpuArg, CpuArg];
  const f = COMPARE_FUNCS[enumScalar('onnx_compare', scalars, 'op', COMPARE_OPS)];
  const av = { shape: a.desc.shape, values: floatCopyOf(a) };
  const bv = { shape: b.desc.shape, values: floatCopyOf(b) };
  compareInto(f, av, bv, c.desc.shape, c.data);
};

export const onnxCompareCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_compare',
  source: `${CUDA_INDEX}
extern "C" __global__ void tdm_onnx_compare(const X_t* __restrict__ a, const X_t* __restrict__ b,
    unsigned char* __restrict__ c, long long n, DIMS6(d), DIMS6(sa), DIMS6(sb)) {
  const long long dims[6] = ARR6(d), as[6] = ARR6(sa), bs[6] = ARR6(sb);
  ${GRID_STRIDE} {
    X_c p = ldX(a, offset6(i, dims, as));
    X_c q = ldX(b, offset6(i, dims, bs));
${COMPARE_OPS.map((op, i) => `#${i === 0 ? 'if' : 'elif'} OP == ${i}\n    bool r = ${COMPARE_CUDA[op]};`).join('\n')}
#endif
    c[i] = r ? 1 : 0;
  }
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  defines: (args, scalars) => ({
    OP: COMPARE_OPS.indexOf(enumScalar('onnx_compare', scalars, 'op', COMPARE_OPS)),
    IDX32: idx32(numel(args[2]!.desc.shape)),
  }),
  grid: (args) => elementwiseGrid(count(args[2]!)),
  block: () => BLOCK_DIM,
  params: (args) => {
    const [a, b, c] = [args[0]!.desc.shape, args[1]!.desc.shape, args[2]!.desc.shape];
    const pa = pad6(c, broadcastStrides(a, c));
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      { kind: 'ptr', arg: 2 },
      { kind: 'i64', value: numel(c) },
      ...i64Params(pa.dims),
      ...i64Params(pa.strides),
      ...i64Params(pad6(c, broadcastStrides(b, c)).strides),
    ];
  },
};

// ---- isinf / isnan

export const CLASSIFY_OPS = ['isinf', 'isnan'] as const;

function classifyParams(scalars: Scalars) {
  return {
    op: enumScalar('onnx_isinf', scalars, 'op', CLASSIFY_OPS),
    positive: boolScalar('onnx_isinf', scalars, 'detectPositive', true),
    negative: boolScalar('onnx_isinf', scalars, 'detectNegative', true),
  };
}

function classifyFunc(scalars: Scalars): (v: number) => number {
  const p = classifyParams(scalars);
  if (p.op === 'isnan') return (v) => (v !== v ? 1 : 0);
  return (v) => ((p.positive && v === Infinity) || (p.negative && v === -Infinity) ? 1 : 0);
}

export const onnxIsInfDef = onnxDef(
  'onnx_isinf',
  [
    ['x', 'r'],
    ['y', 'w'],
  ],
  ['op', 'detectPositive', 'detectNegative'],
  (args, scalars) => {
    classifyParams(scalars);
    requireDTypes('onnx_isinf', args, ['x'], FLOAT_DTYPES);
    requireDTypes('onnx_isinf', args, ['y'], ['u8']);
    requireShape('onnx_isinf', 'y', args.y!.shape, args.x!.shape);
  },
  (args) => streamCost(args, 1),
);

export const onnxIsInfReference: ReferenceFn = (args, scalars) => ({
  y: args.x!.values.map(classifyFunc(scalars)),
});

export const onnxIsInfCpu: CpuKernel = (args, scalars) => {
  const [x, y] = args as [CpuArg, CpuArg];
  const f = classifyFunc(scalars);
  const v = floatCopyOf(x);
  for (let i = 0; i < v.length; i++) y.data[i] = f(v[i]!);
};

export const onnxIsInfCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_isinf',
  source: `
extern "C" __global__ void tdm_onnx_isinf(const X_t* __restrict__ x, unsigned char* __restrict__ y, long long n) {
  ${GRID_STRIDE} {
    X_c v = ldX(x, i);
#if ISNAN
    y[i] = v != v ? 1 : 0;
#else
    y[i] = ((POS && v > (X_c)0) || (NEG && v < (X_c)0)) && v - v != v - v ? 1 : 0;
#endif
  }
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  defines: (_args, scalars) => {
    const p = classifyParams(scalars);
    return { ISNAN: p.op === 'isnan' ? 1 : 0, POS: p.positive ? 1 : 0, NEG: p.negative ? 1 : 0 };
  },
  grid: (args) => elementwiseGrid(count(args[0]!)),
  block: () => BLOCK_DIM,
  params: (args) => [
    { kind: 'ptr', arg: 0 },
    { kind: 'ptr', arg: 1 },
    { kind: 'i64', value: numel(args[0]!.desc.shape) },
  ],
};

// ---- where

export const onnxWhereDef = onnxDef(
  'onnx_where',
  [
    ['cond', 'r'],
    ['x', 'r'],
    ['y', 'r'],
    ['z', 'w'],
  ],
  [],
  (args) => {
    requireDTypes('onnx_where', args, ['cond'], ['u8']);
    requireDTypes('onnx_where', args, ['x', 'y', 'z'], COPY_DTYPES);
    for (const n of ['cond', 'x', 'y', 'z']) requireRank('onnx_where', n, args[n]!.shape, 0);
    const xy = broadcastShape('onnx_where', args.x!.shape, args.y!.shape);
    requireShape('onnx_where', 'z', args.z!.shape, broadcastShape('onnx_where', args.cond!.shape, xy));
  },
  (args) => streamCost(args, 1, 'z'),
);

function whereInto(
  k: { shape: readonly number[]; values: ArrayLike<number> },
  x: { shape: readonly number[]; values: ArrayLike<number> },
  y: { shape: readonly number[]; values: ArrayLike<number> },
  shape: readonly number[],
  out: { [i: number]: number },
): void {
  const s = [k, x, y].map((t) => broadcastStrides(t.shape, shape));
  const last = shape.length - 1;
  const inner = last < 0 ? 1 : shape[last]!;
  const [jk, jx, jy] = s.map((st) => (last < 0 ? 0 : st[last]!)) as [number, number, number];
  forEachRow(shape, s, [0, 0, 0], ([ok, ox, oy], row) => {
    const base = row * inner;
    for (let j = 0; j < inner; j++)
      out[base + j] = k.values[ok! + j * jk] !== 0 ? x.values[ox! + j * jx]! : y.values[oy! + j * jy]!;
  });
}

export const onnxWhereReference: ReferenceFn = (args) => {
  const [k, x, y, z] = [args.cond!, args.x!, args.y!, args.z!];
  const out = new Float64Array(numel(z.desc.shape));
  const v = (a: typeof k) => ({ shape: a.desc.shape, values: a.values });
  whereInto(v(k), v(x), v(y), z.desc.shape, out);
  return { z: out };
};

/** Elements are copied as stored (any dtype). */
export const onnxWhereCpu: CpuKernel = (args) => {
  const [k, x, y, z] = args as [CpuArg, CpuArg, CpuArg, CpuArg];
  const v = (a: CpuArg) => ({ shape: a.desc.shape, values: a.data });
  whereInto(v(k), v(x), v(y), z.desc.shape, z.data);
};

export const onnxWhereCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_where',
  source: `${CUDA_INDEX}
extern "C" __global__ void tdm_onnx_where(const unsigned char* __restrict__ k, const X_t* __restrict__ x,
    const X_t* __restrict__ y, X_t* __restrict__ z, long long n, DIMS6(d), DIMS6(sk), DIMS6(sx), DIMS6(sy)) {
  const long long dims[6] = ARR6(d), ks[6] = ARR6(sk), xs[6] = ARR6(sx), ys[6] = ARR6(sy);
  ${GRID_STRIDE} {
    z[i] = k[offset6(i, dims, ks)] ? x[offset6(i, dims, xs)] : y[offset6(i, dims, ys)];
  }
}`,
  dtypes: (args) => ({ X: args[3]!.desc.dtype }),
  defines: (args) => ({ IDX32: idx32(numel(args[3]!.desc.shape)) }),
  grid: (args) => elementwiseGrid(count(args[3]!)),
  block: () => BLOCK_DIM,
  params: (args) => {
    const z = args[3]!.desc.shape;
    const st = (i: number) => pad6(z, broadcastStrides(args[i]!.desc.shape, z));
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      { kind: 'ptr', arg: 2 },
      { kind: 'ptr', arg: 3 },
      { kind: 'i64', value: numel(z) },
      ...i64Params(st(0).dims),
      ...i64Params(st(0).strides),
      ...i64Params(st(1).strides),
      ...i64Params(st(2).strides),
    ];
  },
};
