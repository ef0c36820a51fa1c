/**
 * The conformance cases: plain data, run against every backend present (the CPU engines in
 * test/kernels, the runtime and GPU backends through `prepareCase`/`checkCase` in conformance.ts).
 * Inputs are random and never zero; shapes are deliberately not multiples of any tile size.
 */
import { type DType, epsilon } from '../core/dtype.js';
import type { Scalars } from '../devices/device.js';
import { BINARY_OPS } from './binary/ops.js';
import { CAST_DTYPES } from './cast/convert.js';
import { REDUCE_OPS } from './reduce/params.js';
import { UNARY_OPS } from './unary/ops.js';
import type { ConformanceCase, ValueRange } from './case-types.js';
import { NN_GROUPS } from './nn-groups.js';
import { ONNX_GROUPS } from './onnx-groups.js';

export type { CaseArg, ConformanceCase, ValueRange } from './case-types.js';

export const FLOAT_CASE_DTYPES: readonly DType[] = ['f32', 'f64', 'f16', 'bf16'];

/** Precision the arithmetic runs in: 16-bit floats compute in f32 on every backend. */
function workEps(dtype: DType): number {
  return dtype === 'f64' ? epsilon('f64') : epsilon('f32');
}

function elementwise(dtype: DType): { rtol: number; atol: number } {
  return { rtol: 2 * epsilon(dtype), atol: 2 * epsilon(dtype) * 2 ** -6 };
}

const GEMM_SHAPES: readonly (readonly [number, number, number])[] = [
  [1, 1, 1],
  [3, 5, 7],
  [17, 33, 9],
  [64, 64, 64],
  [67, 129, 35],
  [130, 70, 260],
];

function gemmCases(): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  for (const dtype of FLOAT_CASE_DTYPES) {
    const shapes = dtype === 'f32' || dtype === 'f64' ? GEMM_SHAPES : GEMM_SHAPES.slice(1, 5);
    for (const [m, k, n] of shapes) {
      for (const [transA, transB] of [
        [false, false],
        [true, false],
        [false, true],
        [true, true],
      ] as const) {
        for (const [alpha, beta] of [
          [1, 0],
          [0.5, -1.5],
        ] as const) {
          out.push({
            name: `gemm ${dtype} m${m} k${k} n${n}${transA ? ' Aᵀ' : ''}${transB ? ' Bᵀ' : ''} alpha ${alpha} beta ${beta}`,
            op: 'gemm',
            args: {
              a: { shape: transA ? [k, m] : [m, k], dtype },
              b: { shape: transB ? [n, k] : [k, n], dtype },
              c: { shape: [m, n], dtype },
            },
            scalars: { alpha, beta, transA, transB },
            rtol: 2 * epsilon(dtype),
            atol: 4 * k * workEps(dtype),
          });
        }
      }
    }
  }
  out.push({
    name: 'gemm f32 k0 (C = beta C)',
    op: 'gemm',
    args: {
      a: { shape: [4, 0], dtype: 'f32' },
      b: { shape: [0, 5], dtype: 'f32' },
      c: { shape: [4, 5], dtype: 'f32' },
    },
    scalars: { alpha: 1, beta: 0.5 },
    rtol: 2 * epsilon('f32'),
    atol: 0,
  });
  return out;
}

function elementwiseCases(): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  for (const dtype of FLOAT_CASE_DTYPES) {
    const tol = elementwise(dtype);
    for (const shape of [[1], [5000], [3, 17, 5]]) {
      out.push({
        name: `axpy ${dtype} [${shape}]`,
        op: 'axpy',
        args: { x: { shape, dtype }, y: { shape, dtype } },
        scalars: { alpha: -0.75 },
        ...elementwise(dtype),
        // y + alpha x can cancel: the error scales with the inputs, not with the result.
        atol: 4 * epsilon(dtype),
      });
      out.push({
        name: `scale ${dtype} [${shape}]`,
        op: 'scale',
        args: { x: { shape, dtype } },
        scalars: { alpha: 1.5 },
        ...tol,
      });
    }
    for (const op of UNARY_OPS) {
      const range = op === 'log' || op === 'sqrt' ? 'positive' : 'signed';
      const shape = [7, 301];
      out.push({
        name: `unary ${op} ${dtype}`,
        op: 'unary',
        args: { x: { shape, dtype, range }, y: { shape, dtype } },
        scalars: { op },
        ...tol,
      });
    }
    for (const op of BINARY_OPS) {
      const shape = [4099];
      out.push({
        name: `binary ${op} ${dtype}`,
        op: 'binary',
        args: {
          a: { shape, dtype, range: op === 'pow' ? 'positive' : 'signed' },
          b: { shape, dtype },
          c: { shape, dtype },
        },
        scalars: { op },
        ...tol,
        atol: op === 'add' || op === 'sub' ? 2 * epsilon(dtype) : tol.atol,
      });
    }
  }
  return out;
}

function reduceCases(): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  const layouts: readonly { x: number[]; y: number[]; scalars: Scalars; len: number }[] = [
    { x: [7, 13, 5], y: [13, 5], scalars: { axis: 0 }, len: 7 },
    { x: [7, 13, 5], y: [7, 5], scalars: { axis: 1 }, len: 13 },
    { x: [7, 13, 5], y: [7, 13], scalars: { axis: -1 }, len: 5 },
    { x: [4097], y: [1], scalars: { axis: 0 }, len: 4097 },
    { x: [33, 65], y: [1], scalars: { all: true }, len: 33 * 65 },
  ];
  for (const dtype of FLOAT_CASE_DTYPES) {
    for (const op of REDUCE_OPS) {
      for (const l of layouts) {
        out.push({
          name: `reduce ${op} ${dtype} [${l.x}] ${JSON.stringify(l.scalars)}`,
          op: 'reduce',
          args: { x: { shape: l.x, dtype }, y: { shape: l.y, dtype } },
          scalars: { op, ...l.scalars },
          rtol: 2 * epsilon(dtype),
          atol: (op === 'max' ? 0 : 2 * l.len * workEps(dtype)) / (op === 'mean' ? l.len : 1),
        });
      }
    }
  }
  return out;
}

function dataMovementCases(): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  const fillValues: Record<DType, number> = { f32: 1.25, f64: -3.5, f16: 0.1, bf16: 7.3, i32: -7, u8: 200 };
  for (const dtype of CAST_DTYPES) {
    const exact = dtype === 'i32' || dtype === 'u8';
    const tol = exact ? { rtol: 0, atol: 0 } : { rtol: epsilon(dtype), atol: 0 };
    out.push({
      name: `fill ${dtype}`,
      op: 'fill',
      args: { y: { shape: [3, 1001], dtype } },
      scalars: { value: fillValues[dtype] },
      ...tol,
    });
    out.push({
      name: `copy ${dtype}`,
      op: 'copy',
      args: { x: { shape: [5, 999], dtype }, y: { shape: [5, 999], dtype } },
      scalars: {},
      rtol: 0,
      atol: 0,
    });
    for (const src of CAST_DTYPES) {
      const range: ValueRange = src === 'i32' ? 'int' : src === 'u8' ? 'byte' : 'wide';
      out.push({
        name: `cast ${src} -> ${dtype}`,
        op: 'cast',
        args: { x: { shape: [4999], dtype: src, range }, y: { shape: [4999], dtype } },
        scalars: {},
        ...tol,
      });
    }
  }
  out.push({ name: 'noop', op: 'noop', args: {}, scalars: {}, rtol: 0, atol: 0 });
  return out;
}

export const CONFORMANCE_CASES: readonly ConformanceCase[] = [
  ...gemmCases(),
  ...elementwiseCases(),
  ...reduceCases(),
  ...dataMovementCases(),
  ...NN_GROUPS.flatMap((g) => g.cases()),
  ...ONNX_GROUPS.flatMap((g) => g.cases()),
];
