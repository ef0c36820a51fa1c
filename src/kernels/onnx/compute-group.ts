/** Matrix products, Resize and the reductions as an op group, with their conformance cases. */
import { onnxMatmulWebGpu, onnxReduceWebGpu } from './webgpu-compute.js';
import { onnxResizeWebGpu } from './webgpu-layout.js';
import { onnxGemmWebGpu } from './webgpu-norm.js';
import type { Scalars } from '../../devices/device.js';
import type { ConformanceCase } from '../case-types.js';
import { elementTolerance, FLOAT_DTYPES, type OnnxOpGroup, sumTolerance } from './common.js';
import {
  onnxGemmCpu,
  onnxGemmCuda,
  onnxGemmDef,
  onnxGemmReference,
  onnxMatmulCpu,
  onnxMatmulCuda,
  onnxMatmulDef,
  onnxMatmulReference,
} from './matmul.js';
import { onnxReduceCpu, onnxReduceCuda, onnxReduceDef, onnxReduceReference, REDUCE_OPS } from './reduce.js';
import { onnxResizeCpu, onnxResizeCuda, onnxResizeDef, onnxResizeReference } from './resize.js';
import { broadcastShape, reduceAxes, reduceOutputShape } from './shapes.js';

/** A plain product, a batch folded into M, a full batch, batches broadcast on both sides, attention-like. */
const MATMULS: readonly (readonly [number[], number[]])[] = [
  [
    [3, 4],
    [4, 5],
  ],
  [
    [2, 3, 4],
    [4, 5],
  ],
  [
    [2, 3, 4],
    [2, 4, 5],
  ],
  [
    [2, 1, 3, 4],
    [3, 4, 2],
  ],
  [
    [1, 4, 6, 8],
    [1, 4, 8, 6],
  ],
];

function matmulCases(): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  for (const dtype of FLOAT_DTYPES) {
    for (const [a, b] of MATMULS) {
      const batch = broadcastShape('case', a.slice(0, -2), b.slice(0, -2));
      const c = [...batch, a[a.length - 2]!, b[b.length - 1]!];
      out.push({
        name: `onnx_matmul ${dtype} [${a.join(',')}] [${b.join(',')}]`,
        op: 'onnx_matmul',
        args: { a: { shape: a, dtype }, b: { shape: b, dtype }, c: { shape: c, dtype } },
        scalars: {},
        ...sumTolerance(dtype, a[a.length - 1]!),
      });
    }
    const [m, n, k] = [5, 6, 7];
    for (const [label, c, scalars] of [
      ['bias [N]', [n], {}],
      ['bias [M,1] transA alpha beta', [m, 1], { transA: true, alpha: 0.5, beta: 2 }],
      ['bias [] transB', [], { transB: true }],
      ['bias [M,N] transA transB', [m, n], { transA: true, transB: true, beta: -1 }],
      ['beta 0 ignores a NaN C', [m, n], { beta: 0 }],
    ] as const) {
      const s = scalars as Scalars;
      out.push({
        name: `onnx_gemm ${dtype} ${label}`,
        op: 'onnx_gemm',
        args: {
          a: { shape: s['transA'] === true ? [k, m] : [m, k], dtype },
          b: { shape: s['transB'] === true ? [n, k] : [k, n], dtype },
          c: { shape: [...c], dtype, ...(s['beta'] === 0 ? { range: 'nan' as const } : {}) },
          y: { shape: [m, n], dtype },
        },
        scalars: s,
        // beta·c is stored once in the dtype before the product is added onto it (CUDA): two roundings.
        ...sumTolerance(dtype, 2 * k + 4),
      });
    }
  }
  return out;
}

const RESIZES: readonly (readonly [string, number[], number[], Scalars])[] = [
  [
    'nearest asymmetric floor 2x',
    [1, 2, 4, 5],
    [1, 2, 8, 10],
    { mode: 'nearest', coordinateTransformationMode: 'asymmetric', nearestMode: 'floor' },
  ],
  ['nearest half_pixel down', [2, 2, 7, 9], [2, 2, 4, 5], { mode: 'nearest' }],
  ['cubic half_pixel up', [1, 2, 5, 4], [1, 2, 9, 7], { mode: 'cubic' }],
  [
    'cubic A -0.5 exclude_outside down',
    [2, 1, 9, 8],
    [2, 1, 5, 3],
    { mode: 'cubic', cubicCoeffA: -0.5, excludeOutside: true },
  ],
  [
    'cubic asymmetric scales 1.7x2.2',
    [1, 1, 6, 5],
    [1, 1, 10, 11],
    { mode: 'cubic', coordinateTransformationMode: 'asymmetric', scaleH: 1.7, scaleW: 2.2 },
  ],
  [
    'linear tf_crop_and_resize',
    [1, 2, 6, 7],
    [1, 2, 5, 4],
    {
      mode: 'linear',
      coordinateTransformationMode: 'tf_crop_and_resize',
      roiH0: -0.2,
      roiH1: 0.9,
      roiW0: 0.3,
      roiW1: 1.25,
      extrapolationValue: 3.5,
    },
  ],
  [
    'nearest tf_crop_and_resize',
    [1, 1, 5, 5],
    [1, 1, 3, 6],
    {
      mode: 'nearest',
      coordinateTransformationMode: 'tf_crop_and_resize',
      roiH0: 0.1,
      roiH1: 0.8,
      roiW0: -0.5,
      roiW1: 1.5,
    },
  ],
  [
    'nearest align_corners ceil',
    [1, 1, 5, 6],
    [1, 1, 7, 4],
    { mode: 'nearest', coordinateTransformationMode: 'align_corners', nearestMode: 'ceil' },
  ],
  [
    'nearest tf_half_pixel_for_nn round_prefer_ceil',
    [1, 2, 4, 6],
    [1, 2, 6, 9],
    {
      mode: 'nearest',
      coordinateTransformationMode: 'tf_half_pixel_for_nn',
      nearestMode: 'round_prefer_ceil',
    },
  ],
  ['linear half_pixel 2x', [1, 2, 4, 5], [1, 2, 8, 10], { mode: 'linear' }],
  [
    'linear align_corners',
    [2, 1, 5, 4],
    [2, 1, 9, 7],
    { mode: 'linear', coordinateTransformationMode: 'align_corners' },
  ],
  [
    'linear pytorch_half_pixel to one row',
    [1, 2, 6, 8],
    [1, 2, 1, 3],
    { mode: 'linear', coordinateTransformationMode: 'pytorch_half_pixel' },
  ],
  [
    'linear asymmetric scales 2.5x1.5',
    [1, 1, 4, 6],
    [1, 1, 10, 9],
    { mode: 'linear', coordinateTransformationMode: 'asymmetric', scaleH: 2.5, scaleW: 1.5 },
  ],
];

function resizeCases(): ConformanceCase[] {
  return FLOAT_DTYPES.flatMap((dtype) =>
    RESIZES.map(([label, x, y, scalars]): ConformanceCase => ({
      name: `onnx_resize ${dtype} ${label}`,
      op: 'onnx_resize',
      args: { x: { shape: x, dtype }, y: { shape: y, dtype } },
      scalars,
      ...(scalars['mode'] === 'nearest' ? { rtol: 0, atol: 0 } : elementTolerance(dtype, 8)),
    })),
  );
}

const REDUCTIONS: readonly (readonly [number[], Scalars])[] = [
  [[3, 4, 5], { axes: '1' }],
  [[3, 4, 5], { axes: '0,2', keepdims: false }],
  [[2, 3, 4], { axes: '' }],
  [[2, 300], { axes: '-1', keepdims: false }],
  [[2, 3, 2, 2, 3, 2], { axes: '1,3,4' }],
  [[3, 4], { axes: '', noopWithEmptyAxes: true }],
];

function reduceCases(): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  for (const dtype of FLOAT_DTYPES)
    for (const op of REDUCE_OPS)
      for (const [x, s] of REDUCTIONS) {
        const axes = reduceAxes('case', x.length, s);
        const y = reduceOutputShape(x, axes, s['keepdims'] !== false);
        const count =
          x.reduce((a, b) => a * b, 1) /
          Math.max(
            1,
            y.reduce((a, b) => a * b, 1),
          );
        out.push({
          name: `onnx_reduce ${op} ${dtype} [${x.join(',')}] ${JSON.stringify(s)}`,
          op: 'onnx_reduce',
          // prod of many values in ±(0.125, 1] underflows; log_sum_exp and l2 take any sign.
          args: {
            x: { shape: x, dtype, ...(op === 'prod' ? { range: 'positive' as const } : {}) },
            y: { shape: y, dtype },
          },
          scalars: { op, ...s },
          ...(op === 'max' || op === 'min'
            ? { rtol: 0, atol: 0 }
            : op === 'prod'
              ? elementTolerance(dtype, 2 * count)
              : sumTolerance(dtype, 2 * count)),
        });
      }
  return out;
}

export const onnxComputeGroup: OnnxOpGroup = {
  name: 'onnx-compute',
  defs: [onnxMatmulDef, onnxGemmDef, onnxResizeDef, onnxReduceDef],
  impls: [
    { op: 'onnx_matmul', backend: 'cpu', impl: onnxMatmulCpu },
    { op: 'onnx_gemm', backend: 'cpu', impl: onnxGemmCpu },
    { op: 'onnx_resize', backend: 'cpu', impl: onnxResizeCpu },
    { op: 'onnx_reduce', backend: 'cpu', impl: onnxReduceCpu },
    { op: 'onnx_matmul', backend: 'cuda', impl: onnxMatmulCuda },
    { op: 'onnx_gemm', backend: 'cuda', impl: onnxGemmCuda },
    { op: 'onnx_resize', backend: 'cuda', impl: onnxResizeCuda },
    { op: 'onnx_reduce', backend: 'cuda', impl: onnxReduceCuda },
    { op: 'onnx_matmul', backend: 'webgpu', impl: onnxMatmulWebGpu },
    { op: 'onnx_gemm', backend: 'webgpu', impl: onnxGemmWebGpu },
    { op: 'onnx_resize', backend: 'webgpu', impl: onnxResizeWebGpu },
    { op: 'onnx_reduce', backend: 'webgpu', impl: onnxReduceWebGpu },
  ],
  references: {
    onnx_matmul: onnxMatmulReference,
    onnx_gemm: onnxGemmReference,
    onnx_resize: onnxResizeReference,
    onnx_reduce: onnxReduceReference,
  },
  cases: () => [...matmulCases(), ...resizeCases(), ...reduceCases()],
};
