/**
 * onnx_matmul (numpy matmul with broadcast batch dimensions) and onnx_gemm (alpha, beta, transA,
 * transB, a broadcast bias C). Products run on the worker's GEMM engine on the CPU (OpenBLAS where it
 * loads) and on cuBLAS on CUDA (ctx.gemm; cuBLASLt's strided batch when both operands carry the whole
 * batch); nothing here multiplies matrices by hand.
 */
import { TandemError } from '../../core/errors.js';
import { bytesPerElement } from '../../core/dtype.js';
import { numel } from '../../core/shape.js';
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import type { CudaArg, CudaNative, CudaProgram } from '../../devices/cuda/kernel-api.js';
import type { Scalars, TensorDesc } from '../../devices/device.js';
import { type FloatArray, floatCopyOf, isHalf, storeFloat } from '../common/cpu-float.js';
import { BLOCK_DIM, GRID_STRIDE, elementwiseGrid } from '../common/cuda.js';
import type { ReferenceFn } from '../common/reference.js';
import { boolScalar, numberScalar } from '../common/scalars.js';
import { floatGemm } from '../gemm/cpu.js';
import { FLOAT_DTYPES, onnxDef, requireDTypes } from './common.js';
import {
  broadcastShape,
  broadcastStrides,
  contiguousStrides,
  requireRank,
  requireShape,
  sameShape,
} from './shapes.js';

export interface MatmulGeometry {
  readonly m: number;
  readonly k: number;
  readonly n: number;
  readonly batch: number;
  /** Per flat batch index: the matrix index of a and of b (broadcast batch dims repeat matrices). */
  readonly aMatrix: (i: number) => number;
  readonly bMatrix: (i: number) => number;
  /** b is one matrix for every batch: the batch folds into M. */
  readonly foldable: boolean;
  /** a and b both hold the full batch in order. */
  readonly fullBatch: boolean;
}

export function matmulGeometry(a: TensorDesc, b: TensorDesc, c: TensorDesc): MatmulGeometry {
  requireRank('onnx_matmul', 'a', a.shape, 2);
  requireRank('onnx_matmul', 'b', b.shape, 2);
  const [m, k] = a.shape.slice(-2) as [number, number];
  const [kb, n] = b.shape.slice(-2) as [number, number];
  if (k !== kb) {
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `onnx_matmul: inner sizes differ: a is [${a.shape.join(',')}], b is [${b.shape.join(',')}]`,
      {
        op: 'onnx_matmul',
      },
    );
  }
  const [ab, bb] = [a.shape.slice(0, -2), b.shape.slice(0, -2)];
  const batchShape = broadcastShape('onnx_matmul', ab, bb);
  requireShape('onnx_matmul', 'c', c.shape, [...batchShape, m, n]);
  const [as, bs, cs] = [
    broadcastStrides(ab, batchShape),
    broadcastStrides(bb, batchShape),
    contiguousStrides(batchShape),
  ];
  const matrixOf = (strides: number[]) => (i: number) =>
    cs.reduce((acc, s, d) => acc + (Math.floor(i / s) % batchShape[d]!) * strides[d]!, 0);
  const batch = numel(batchShape);
  return {
    m,
    k,
    n,
    batch,
    aMatrix: matrixOf(as),
    bMatrix: matrixOf(bs),
    foldable: numel(bb) === 1 && numel(ab) === batch,
    fullBatch: sameShape(ab, batchShape) && sameShape(bb, batchShape),
  };
}

export const onnxMatmulDef = onnxDef(
  'onnx_matmul',
  [
    ['a', 'r'],
    ['b', 'r'],
    ['c', 'w'],
  ],
  [],
  (args) => {
    requireDTypes('onnx_matmul', args, ['a', 'b', 'c'], FLOAT_DTYPES);
    matmulGeometry(args.a!, args.b!, args.c!);
  },
  (args) => {
    const g = matmulGeometry(args.a!, args.b!, args.c!);
    return { flops: 2 * g.batch * g.m * g.n * g.k, bytes: args.a!.bytes + args.b!.bytes + args.c!.bytes };
  },
);

export const onnxMatmulReference: ReferenceFn = (args) => {
  const g = matmulGeometry(args.a!.desc, args.b!.desc, args.c!.desc);
  const [a, b] = [args.a!.values, args.b!.values];
  const c = new Float64Array(g.batch * g.m * g.n);
  for (let bi = 0; bi < g.batch; bi++) {
    const [ao, bo, co] = [g.aMatrix(bi) * g.m * g.k, g.bMatrix(bi) * g.k * g.n, bi * g.m * g.n];
    for (let i = 0; i < g.m; i++)
      for (let j = 0; j < g.n; j++) {
        let s = 0;
        for (let q = 0; q < g.k; q++) s += a[ao + i * g.k + q]! * b[bo + q * g.n + j]!;
        c[co + i * g.n + j] = s;
      }
  }
  return { c };
};

export const onnxMatmulCpu: CpuKernel = (args, _scalars, ctx) => {
  const [a, b, c] = args as [CpuArg, CpuArg, CpuArg];
  const g = matmulGeometry(a.desc, b.desc, c.desc);
  const [af, bf] = [floatCopyOf(a), floatCopyOf(b)];
  const cf = isHalf(c.desc.dtype) ? new Float32Array(c.data.length) : (c.data as FloatArray);
  const call = { transA: false, transB: false, k: g.k, alpha: 1, beta: 0 };
  if (g.foldable) floatGemm(ctx, { ...call, m: g.batch * g.m, n: g.n }, af, bf, cf);
  else
    for (let bi = 0; bi < g.batch; bi++) {
      const ao = g.aMatrix(bi) * g.m * g.k;
      const bo = g.bMatrix(bi) * g.k * g.n;
      floatGemm(
        ctx,
        { ...call, m: g.m, n: g.n },
        af.subarray(ao, ao + g.m * g.k),
        bf.subarray(bo, bo + g.k * g.n),
        cf.subarray(bi * g.m * g.n, (bi + 1) * g.m * g.n),
      );
    }
  storeFloat(c, cf);
};

export const onnxMatmulCuda: CudaNative = {
  kind: 'native',
  run(ctx, args) {
    const [a, b, c] = args as [CudaArg, CudaArg, CudaArg];
    const g = matmulGeometry(a.desc, b.desc, c.desc);
    const dtype = c.desc.dtype;
    const size = bytesPerElement(dtype);
    const base = { dtype, transA: false, transB: false, k: g.k, alpha: 1, beta: 0 } as const;
    if (g.foldable) {
      ctx.gemm({ ...base, precision: 'default', m: g.batch * g.m, n: g.n, a: a.ptr, b: b.ptr, c: c.ptr });
      return;
    }
    const batch = { count: g.batch, strideA: g.m * g.k, strideB: g.k * g.n, strideC: g.m * g.n };
    const lt = { ...base, m: g.m, n: g.n, a: a.ptr, b: b.ptr, c: c.ptr, epilogue: 'none', batch } as const;
    if (g.fullBatch && g.batch > 1 && dtype !== 'f64' && ctx.matmul(lt)) return;
    for (let bi = 0; bi < g.batch; bi++) {
      ctx.gemm({
        ...base,
        precision: 'default',
        m: g.m,
        n: g.n,
        a: a.ptr + g.aMatrix(bi) * g.m * g.k * size,
        b: b.ptr + g.bMatrix(bi) * g.k * g.n * size,
        c: c.ptr + bi * g.m * g.n * size,
      });
    }
  },
};

// ---- gemm

interface GemmGeometry {
  readonly m: number;
  readonly n: number;
  readonly k: number;
  readonly alpha: number;
  readonly beta: number;
  readonly transA: boolean;
  readonly transB: boolean;
}

export function gemmGeometry(
  a: TensorDesc,
  b: TensorDesc,
  c: TensorDesc,
  y: TensorDesc,
  scalars: Scalars,
): GemmGeometry {
  const op = 'onnx_gemm';
  const transA = boolScalar(op, scalars, 'transA', false);
  const transB = boolScalar(op, scalars, 'transB', false);
  const alpha = numberScalar(op, scalars, 'alpha', 1);
  const beta = numberScalar(op, scalars, 'beta', 1);
  requireRank(op, 'a', a.shape, 2, 2);
  requireRank(op, 'b', b.shape, 2, 2);
  requireRank(op, 'c', c.shape, 0, 2);
  const [m, k] = transA ? [a.shape[1]!, a.shape[0]!] : [a.shape[0]!, a.shape[1]!];
  const [kb, n] = transB ? [b.shape[1]!, b.shape[0]!] : [b.shape[0]!, b.shape[1]!];
  if (k !== kb) {
    throw new TandemError('TANDEM_ERR_SHAPE', `onnx_gemm: inner sizes differ (${k} and ${kb})`, { op });
  }
  requireShape(op, 'y', y.shape, [m, n]);
  requireShape(op, 'c', broadcastShape(op, c.shape, [m, n]), [m, n]);
  return { m, n, k, alpha, beta, transA, transB };
}

export const onnxGemmDef = onnxDef(
  'onnx_gemm',
  [
    ['a', 'r'],
    ['b', 'r'],
    ['c', 'r'],
    ['y', 'w'],
  ],
  ['alpha', 'beta', 'transA', 'transB'],
  (args, scalars) => {
    requireDTypes('onnx_gemm', args, ['a', 'b', 'c', 'y'], FLOAT_DTYPES);
    gemmGeometry(args.a!, args.b!, args.c!, args.y!, scalars);
  },
  (args, scalars) => {
    const g = gemmGeometry(args.a!, args.b!, args.c!, args.y!, scalars);
    return {
      flops: 2 * g.m * g.n * g.k,
      bytes: args.a!.bytes + args.b!.bytes + args.c!.bytes + args.y!.bytes,
    };
  },
);

export const onnxGemmReference: ReferenceFn = (args, scalars) => {
  const g = gemmGeometry(args.a!.desc, args.b!.desc, args.c!.desc, args.y!.desc, scalars);
  const [a, b, c] = [args.a!.values, args.b!.values, args.c!.values];
  const cs = broadcastStrides(args.c!.desc.shape, [g.m, g.n]);
  const y = new Float64Array(g.m * g.n);
  for (let i = 0; i < g.m; i++)
    for (let j = 0; j < g.n; j++) {
      let s = 0;
      for (let q = 0; q < g.k; q++)
        s += a[g.transA ? q * g.m + i : i * g.k + q]! * b[g.transB ? j * g.k + q : q * g.n + j]!;
      y[i * g.n + j] = g.alpha * s + (g.beta === 0 ? 0 : g.beta * c[i * cs[0]! + j * cs[1]!]!);
    }
  return { y };
};

export const onnxGemmCpu: CpuKernel = (args, scalars, ctx) => {
  const [a, b, c, y] = args as [CpuArg, CpuArg, CpuArg, CpuArg];
  const g = gemmGeometry(a.desc, b.desc, c.desc, y.desc, scalars);
  const yf = isHalf(y.desc.dtype) ? new Float32Array(y.data.length) : (y.data as FloatArray);
  if (g.beta !== 0) {
    const cf = floatCopyOf(c);
    const cs = broadcastStrides(c.desc.shape, [g.m, g.n]);
    for (let i = 0; i < g.m; i++)
      for (let j = 0; j < g.n; j++) yf[i * g.n + j] = g.beta * cf[i * cs[0]! + j * cs[1]!]!;
  }
  const call = {
    transA: g.transA,
    transB: g.transB,
    m: g.m,
    n: g.n,
    k: g.k,
    alpha: g.alpha,
    beta: g.beta === 0 ? 0 : 1,
  };
  floatGemm(ctx, call, floatCopyOf(a), floatCopyOf(b), yf);
  storeFloat(y, yf);
};

/** y[i,j] = beta·c[i·cs0 + j·cs1]: the bias the GEMM then adds onto (beta = 1). */
const gemmBias: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_gemm_bias',
  source: `
extern "C" __global__ void tdm_onnx_gemm_bias(const X_t* __restrict__ c, X_t* __restrict__ y, long long n,
    long long N, long long cs0, long long cs1, double beta) {
  ${GRID_STRIDE} stX(y, i, (X_c)beta * ldX(c, (i / N) * cs0 + (i % N) * cs1));
}`,
  dtypes: (args) => ({ X: args[3]!.desc.dtype }),
  grid: (args) => elementwiseGrid(numel(args[3]!.desc.shape)),
  block: () => BLOCK_DIM,
  params: (args, scalars) => {
    const g = gemmGeometry(args[0]!.desc, args[1]!.desc, args[2]!.desc, args[3]!.desc, scalars);
    const cs = broadcastStrides(args[2]!.desc.shape, [g.m, g.n]);
    return [
      { kind: 'ptr', arg: 2 },
      { kind: 'ptr', arg: 3 },
      { kind: 'i64', value: g.m * g.n },
      { kind: 'i64', value: g.n },
      { kind: 'i64', value: cs[0]! },
      { kind: 'i64', value: cs[1]! },
      { kind: 'f64', value: g.beta },
    ];
  },
};

export const onnxGemmCuda: CudaNative = {
  kind: 'native',
  run(ctx, args, scalars) {
    const [a, b, c, y] = args as [CudaArg, CudaArg, CudaArg, CudaArg];
    const g = gemmGeometry(a.desc, b.desc, c.desc, y.desc, scalars);
    if (g.beta !== 0) ctx.launch(gemmBias, args, scalars);
    ctx.gemm({
      dtype: y.desc.dtype,
      precision: 'default',
      transA: g.transA,
      transB: g.transB,
      m: g.m,
      n: g.n,
      k: g.k,
      alpha: g.alpha,
      beta: g.beta === 0 ? 0 : 1,
      a: a.ptr,
      b: b.ptr,
      c: y.ptr,
    });
  },
};
