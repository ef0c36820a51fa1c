/**
 * onnx_binary (numpy broadcasting) and onnx_unary (the ONNX activations): definitions, float64
 * references, CPU and CUDA implementations. See docs/onnx-kernels.md.
 */
import { numel } from '../../core/shape.js';
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import type { CudaProgram } from '../../devices/cuda/kernel-api.js';
import type { Scalars } from '../../devices/device.js';
import { type FloatArray, floatCopyOf, forFloatChunks, isHalf, storeFloat } from '../common/cpu-float.js';
import { BLOCK_DIM, GRID_STRIDE, MATH_OVERLOADS, count, elementwiseGrid } from '../common/cuda.js';
import type { ReferenceFn } from '../common/reference.js';
import { enumScalar } from '../common/scalars.js';
import {
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
import {
  BINARY_CUDA,
  BINARY_FUNCS,
  BINARY_OPS,
  UNARY_CUDA_CASES,
  UNARY_CUDA_HELPERS,
  UNARY_OPS,
  type UnaryParams,
  unaryFunc,
  unaryParams,
} from './elementwise-ops.js';
import {
  broadcastShape,
  broadcastStrides,
  contiguousStrides,
  requireRank,
  requireShape,
  sameShape,
} from './shapes.js';

export const onnxBinaryDef = onnxDef(
  'onnx_binary',
  [
    ['a', 'r'],
    ['b', 'r'],
    ['c', 'w'],
  ],
  ['op'],
  (args, scalars) => {
    enumScalar('onnx_binary', scalars, 'op', BINARY_OPS);
    requireDTypes('onnx_binary', args, ['a', 'b', 'c'], FLOAT_DTYPES);
    for (const n of ['a', 'b', 'c']) requireRank('onnx_binary', n, args[n]!.shape, 0);
    requireShape(
      'onnx_binary',
      'c',
      args.c!.shape,
      broadcastShape('onnx_binary', args.a!.shape, args.b!.shape),
    );
  },
  (args) => streamCost(args, 1, 'c'),
);

export const onnxUnaryDef = onnxDef(
  'onnx_unary',
  [
    ['x', 'r'],
    ['y', 'w'],
  ],
  ['op', 'alpha', 'beta', 'min', 'max'],
  (args, scalars) => {
    unaryParams(scalars);
    requireDTypes('onnx_unary', args, ['x', 'y'], FLOAT_DTYPES);
    requireShape('onnx_unary', 'y', args.y!.shape, args.x!.shape);
  },
  (args) => streamCost(args, 4),
);

/** Element strides of a and b read as broadcast to c's shape. */
function binaryStrides(a: readonly number[], b: readonly number[], c: readonly number[]) {
  return { a: broadcastStrides(a, c), b: broadcastStrides(b, c) };
}

export const onnxBinaryReference: ReferenceFn = (args, scalars) => {
  const f = BINARY_FUNCS[enumScalar('onnx_binary', scalars, 'op', BINARY_OPS)];
  const [a, b, c] = [args.a!, args.b!, args.c!];
  const shape = c.desc.shape;
  const s = binaryStrides(a.desc.shape, b.desc.shape, shape);
  const out = new Float64Array(numel(shape));
  const cs = contiguousStrides(shape);
  for (let i = 0; i < out.length; i++) {
    let ia = 0;
    let ib = 0;
    shape.forEach((_, d) => {
      const coord = Math.floor(i / cs[d]!) % shape[d]!;
      ia += coord * s.a[d]!;
      ib += coord * s.b[d]!;
    });
    out[i] = f(a.values[ia]!, b.values[ib]!);
  }
  return { c: out };
};

export const onnxUnaryReference: ReferenceFn = (args, scalars) => ({
  y: args.x!.values.map(unaryFunc(unaryParams(scalars))),
});

export const onnxBinaryCpu: CpuKernel = (args, scalars) => {
  const [a, b, c] = args as [CpuArg, CpuArg, CpuArg];
  const f = BINARY_FUNCS[enumScalar('onnx_binary', scalars, 'op', BINARY_OPS)];
  if (sameShape(a.desc.shape, b.desc.shape)) {
    forFloatChunks(args, [true, true, false], [false, false, true], ([p, q, r], n) => {
      for (let i = 0; i < n; i++) r![i] = f(p![i]!, q![i]!);
    });
    return;
  }
  const [av, bv] = [floatCopyOf(a), floatCopyOf(b)];
  const out = isHalf(c.desc.dtype)
    ? new Float32Array(c.data.length)
    : (c.data as Float32Array | Float64Array);
  const shape = c.desc.shape;
  const s = binaryStrides(a.desc.shape, b.desc.shape, shape);
  const last = shape.length - 1;
  const inner = last < 0 ? 1 : shape[last]!;
  const [sa, sb] = last < 0 ? [0, 0] : [s.a[last]!, s.b[last]!];
  forEachRow(shape, [s.a, s.b], [0, 0], ([oa, ob], row) => {
    const base = row * inner;
    for (let j = 0; j < inner; j++) out[base + j] = f(av[oa! + j * sa]!, bv[ob! + j * sb]!);
  });
  storeFloat(c, out);
};

/** The ops PaddleOCR runs on whole feature maps get their own loops (inlined arithmetic, no call). */
function unaryLoop(p: UnaryParams, x: FloatArray, y: FloatArray, n: number): void {
  switch (p.op) {
    case 'relu':
      for (let i = 0; i < n; i++) y[i] = x[i]! < 0 ? 0 : x[i]!;
      return;
    case 'hard_swish':
      for (let i = 0; i < n; i++) {
        const v = x[i]!;
        const t = v / 6 + 0.5;
        y[i] = t !== t ? NaN : v * (t < 0 ? 0 : t > 1 ? 1 : t);
      }
      return;
    case 'hard_sigmoid':
      for (let i = 0; i < n; i++) {
        const t = p.alpha * x[i]! + p.beta;
        y[i] = t !== t ? NaN : t < 0 ? 0 : t > 1 ? 1 : t;
      }
      return;
    case 'sigmoid':
      for (let i = 0; i < n; i++) y[i] = 1 / (1 + Math.exp(-x[i]!));
      return;
    case 'clip':
      for (let i = 0; i < n; i++) {
        const v = x[i]!;
        y[i] = v < p.min ? p.min : v > p.max ? p.max : v;
      }
      return;
    default: {
      const f = unaryFunc(p);
      for (let i = 0; i < n; i++) y[i] = f(x[i]!);
    }
  }
}

export const onnxUnaryCpu: CpuKernel = (args, scalars) => {
  const p = unaryParams(scalars);
  forFloatChunks(args, [true, false], [false, true], ([x, y], n) => unaryLoop(p, x!, y!, n));
};

const BINARY_CASES = BINARY_OPS.map(
  (op, i) => `#${i === 0 ? 'if' : 'elif'} OP == ${i}\n    X_c r = ${BINARY_CUDA[op]};`,
).join('\n');

export const onnxBinaryCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_binary',
  source: `${MATH_OVERLOADS}${CUDA_INDEX}
extern "C" __global__ void tdm_onnx_binary(const X_t* __restrict__ a, const X_t* __restrict__ b,
    X_t* __restrict__ c, long long n, DIMS6(d), DIMS6(sa), DIMS6(sb)) {
  const long long dims[6] = ARR6(d), as[6] = ARR6(sa), bs[6] = ARR6(sb);
  ${GRID_STRIDE} {
#if A_FULL
    X_c p = ldX(a, i);
#else
    X_c p = ldX(a, offset6(i, dims, as));
#endif
#if B_FULL
    X_c q = ldX(b, i);
#else
    X_c q = ldX(b, offset6(i, dims, bs));
#endif
${BINARY_CASES}
#endif
    stX(c, i, r);
  }
}`,
  dtypes: (args) => ({ X: args[2]!.desc.dtype }),
  defines: (args, scalars) => ({
    OP: BINARY_OPS.indexOf(enumScalar('onnx_binary', scalars, 'op', BINARY_OPS)),
    A_FULL: sameShape(args[0]!.desc.shape, args[2]!.desc.shape) ? 1 : 0,
    B_FULL: sameShape(args[1]!.desc.shape, args[2]!.desc.shape) ? 1 : 0,
    IDX32: idx32(numel(args[2]!.desc.shape)),
  }),
  grid: (args) => elementwiseGrid(count(args[2]!)),
  block: () => BLOCK_DIM,
  params: (args) => {
    const [a, b, c] = [args[0]!.desc.shape, args[1]!.desc.shape, args[2]!.desc.shape];
    const s = binaryStrides(a, b, c);
    const pa = pad6(c, s.a);
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      { kind: 'ptr', arg: 2 },
      { kind: 'i64', value: numel(c) },
      ...i64Params(pa.dims),
      ...i64Params(pa.strides),
      ...i64Params(pad6(c, s.b).strides),
    ];
  },
};

export const onnxUnaryCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_unary',
  source: `${MATH_OVERLOADS}${UNARY_CUDA_HELPERS}
extern "C" __global__ void tdm_onnx_unary(const X_t* __restrict__ x, X_t* __restrict__ y, long long n,
    double ALPHA, double BETA, double LO, double HI) {
  ${GRID_STRIDE} {
    X_c v = ldX(x, i);
${UNARY_CUDA_CASES}
    stX(y, i, r);
  }
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  defines: (_args, scalars: Scalars) => ({ OP: UNARY_OPS.indexOf(unaryParams(scalars).op) }),
  grid: (args) => elementwiseGrid(count(args[0]!)),
  block: () => BLOCK_DIM,
  params: (args, scalars) => {
    const p = unaryParams(scalars);
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      { kind: 'i64', value: count(args[0]!) },
      { kind: 'f64', value: p.alpha },
      { kind: 'f64', value: p.beta },
      { kind: 'f64', value: p.min },
      { kind: 'f64', value: p.max },
    ];
  },
};
