/**
 * The index and scan ONNX ops (ArgMax/ArgMin, GatherElements, Trilu, CumSum, Hardmax, OneHot, TopK, GatherND) as an op group, with
 * their conformance cases. WebGPU versions of gather_elements, gather_nd, argreduce, hardmax and onehot
 * in webgpu-index.ts, of topk, cumsum and trilu in webgpu-scan.ts.
 */
import type { Scalars } from '../../devices/device.js';
import type { ConformanceCase } from '../case-types.js';
import type { DType } from '../../core/dtype.js';
import { COPY_DTYPES, FLOAT_DTYPES, type OnnxOpGroup, sumTolerance } from './common.js';
import {
  argGeometry,
  onnxArgReduceCpu,
  onnxArgReduceCuda,
  onnxArgReduceDef,
  onnxArgReduceReference,
  onnxGatherElementsCpu,
  onnxGatherElementsCuda,
  onnxGatherElementsDef,
  onnxGatherElementsReference,
} from './index-ops.js';
import {
  hardmaxGeometry,
  onehotGeometry,
  onnxHardmaxCpu,
  onnxHardmaxCuda,
  onnxHardmaxDef,
  onnxHardmaxReference,
  onnxOnehotCpu,
  onnxOnehotCuda,
  onnxOnehotDef,
  onnxOnehotReference,
} from './onehot.js';
import {
  gatherNdGeometry,
  onnxGatherNdCpu,
  onnxGatherNdCuda,
  onnxGatherNdDef,
  onnxGatherNdReference,
} from './gather-nd.js';
import { onnxTopkCpu, onnxTopkCuda, onnxTopkDef, onnxTopkReference, topkGeometry } from './topk.js';
import {
  CUMSUM_DTYPES,
  onnxCumsumCpu,
  onnxCumsumCuda,
  onnxCumsumDef,
  onnxCumsumReference,
  onnxTriluCpu,
  onnxTriluCuda,
  onnxTriluDef,
  onnxTriluReference,
} from './scan.js';

import {
  onnxArgReduceWebGpu,
  onnxGatherElementsWebGpu,
  onnxGatherNdWebGpu,
  onnxHardmaxWebGpu,
  onnxOnehotWebGpu,
} from './webgpu-index.js';
import { onnxCumsumWebGpu, onnxTopkWebGpu, onnxTriluWebGpu } from './webgpu-scan.js';

const EXACT = { rtol: 0, atol: 0 };

/** A middle axis, a long row, a vector to a scalar, ties broken last, a rank-6 leading axis. */
const ARGS: readonly (readonly [number[], Scalars])[] = [
  [[3, 4, 5], { axis: 1 }],
  [[2, 300], { axis: -1, keepdims: false }],
  [[7], { axis: 0, keepdims: false }],
  [[4, 3, 2], { axis: 0, selectLastIndex: true }],
  [[3, 2, 1, 2, 2, 3], { axis: -6, keepdims: false, selectLastIndex: true }],
];

/** Data, indices and axis: indices longer and shorter than data along the axis, smaller off it. */
const GATHERS: readonly (readonly [number[], number[], number])[] = [
  [[4, 5], [2, 5], 0],
  [[3, 4, 5], [3, 6, 5], 1],
  [[3, 4, 5], [2, 3, 2], -1],
  [[2, 3, 2, 4], [2, 3, 1, 4], 2],
];

const TRILUS: readonly (readonly [number[], Scalars])[] = [
  [[4, 5], {}],
  [[2, 3, 5, 4], { upper: false, k: -1 }],
  [[3, 6], { k: 2 }],
  [[2, 4, 4], { upper: false, k: 10 }],
  [[3, 5], { k: -7 }],
];

const CUMSUMS: readonly (readonly [number[], Scalars])[] = [
  [[7], {}],
  [[3, 4, 5], { axis: 1, exclusive: true }],
  [[3, 4, 5], { axis: -1, reverse: true }],
  [[2, 300], { axis: 1, exclusive: true, reverse: true }],
  [[4, 3, 2], { axis: 0 }],
];

function indexCases(): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  for (const dtype of COPY_DTYPES) {
    for (const op of ['max', 'min'] as const)
      for (const [x, s] of ARGS) {
        const scalars = { op, ...s };
        const y = argGeometry({ shape: x }, scalars).shape;
        out.push({
          name: `onnx_argreduce ${op} ${dtype} [${x.join(',')}] ${JSON.stringify(s)}`,
          op: 'onnx_argreduce',
          args: { x: { shape: x, dtype }, y: { shape: y, dtype: 'i32' } },
          scalars,
          ...EXACT,
        });
      }
    if (dtype !== 'i32' && dtype !== 'u8')
      for (const selectLastIndex of [false, true])
        out.push({
          name: `onnx_argreduce max ${dtype} all NaN ${selectLastIndex ? 'last' : 'first'}`,
          op: 'onnx_argreduce',
          args: { x: { shape: [3, 5], dtype, range: 'nan' }, y: { shape: [3, 1], dtype: 'i32' } },
          scalars: { op: 'max', axis: 1, selectLastIndex },
          ...EXACT,
        });
    for (const [data, indices, axis] of GATHERS) {
      const dim = data[axis < 0 ? axis + data.length : axis]!;
      out.push({
        name: `onnx_gather_elements ${dtype} [${data.join(',')}] indices [${indices.join(',')}] axis ${axis}`,
        op: 'onnx_gather_elements',
        args: {
          data: { shape: data, dtype },
          // Negative indices count from the end; the last one drawn may be out of range (NaN / 0).
          indices: { shape: indices, dtype: 'i32', range: 'index', min: -dim, max: dim + 1 },
          y: { shape: indices, dtype },
        },
        scalars: { axis },
        ...EXACT,
      });
    }
    for (const [x, s] of TRILUS)
      out.push({
        name: `onnx_trilu ${dtype} [${x.join(',')}] ${JSON.stringify(s)}`,
        op: 'onnx_trilu',
        args: { x: { shape: x, dtype }, y: { shape: x, dtype } },
        scalars: s,
        ...EXACT,
      });
  }
  for (const dtype of CUMSUM_DTYPES)
    for (const [x, s] of CUMSUMS) {
      const axis = Number(s['axis'] ?? 0);
      const dim = x[axis < 0 ? axis + x.length : axis]!;
      out.push({
        name: `onnx_cumsum ${dtype} [${x.join(',')}] ${JSON.stringify(s)}`,
        op: 'onnx_cumsum',
        args: { x: { shape: x, dtype }, y: { shape: x, dtype } },
        scalars: s,
        ...(dtype === 'i32' ? EXACT : sumTolerance(dtype, dim)),
      });
    }
  for (const dtype of FLOAT_DTYPES)
    for (const [x, axis, label] of [
      [[3, 4, 5], 1, ''],
      [[2, 300], -1, ''],
      [[4, 3, 2], 0, ' ties'],
      [[3, 5], -1, ' all NaN'],
    ] as const) {
      hardmaxGeometry({ shape: x }, { axis });
      const range =
        label === ' ties'
          ? { range: 'index' as const, min: 1, max: 3 }
          : label === ' all NaN'
            ? { range: 'nan' as const }
            : {};
      out.push({
        name: `onnx_hardmax ${dtype} [${x.join(',')}] axis ${axis}${label}`,
        op: 'onnx_hardmax',
        args: { x: { shape: [...x], dtype, ...range }, y: { shape: [...x], dtype } },
        scalars: { axis },
        ...EXACT,
      });
    }
  for (const [idt, ydt] of [
    ['i32', 'f32'],
    ['f32', 'i32'],
    ['i32', 'f16'],
    ['f64', 'f64'],
    ['u8', 'bf16'],
  ] as const)
    for (const [shape, depth, axis] of [
      [[2, 3], 5, -1],
      [[4], 3, 0],
      [[2, 3, 2], 4, 1],
      [[], 6, 0],
    ] as const) {
      const scalars = { depth, axis, on: 3, off: -2 };
      // Indices in [−depth, depth]: negative ones count from the end, depth itself matches nothing.
      const range =
        idt === 'u8'
          ? { range: 'index' as const, min: 1, max: depth + 1 }
          : { range: 'index' as const, min: -depth, max: depth + 1 };
      out.push({
        name: `onnx_onehot ${idt} -> ${ydt} [${shape.join(',')}] depth ${depth} axis ${axis}`,
        op: 'onnx_onehot',
        args: {
          indices: { shape: [...shape], dtype: idt as DType, ...range },
          y: { shape: onehotGeometry({ shape: [...shape] }, scalars).shape, dtype: ydt as DType },
        },
        scalars,
        ...EXACT,
      });
    }
  for (const dtype of COPY_DTYPES)
    for (const [x, s, label] of [
      [[3, 4, 5], { k: 2, axis: 1 }, ''],
      [[2, 300], { k: 7, largest: false }, ''],
      [[4, 3, 2], { k: 4, axis: 0 }, ' ties'],
      [[3, 4], { k: 4, largest: false }, ' specials'],
      [[3, 4], { k: 3 }, ' specials'],
    ] as const) {
      if (label === ' specials' && (dtype === 'i32' || dtype === 'u8')) continue;
      const shape = topkGeometry({ shape: x }, s).shape;
      const range =
        label === ' ties'
          ? { range: 'index' as const, min: 1, max: 3 }
          : label === ' specials'
            ? { values: [1.5, NaN, -Infinity, 0.25, Infinity, NaN, -3, 0.25, 7, -0.5, Infinity, 2] }
            : {};
      out.push({
        name: `onnx_topk ${dtype} [${x.join(',')}] ${JSON.stringify(s)}${label}`,
        op: 'onnx_topk',
        args: {
          x: { shape: [...x], dtype, ...range },
          values: { shape, dtype },
          indices: { shape, dtype: 'i32' },
        },
        scalars: s,
        ...EXACT,
      });
    }
  for (const dtype of COPY_DTYPES)
    for (const [data, indices, batchDims] of [
      [[4, 5], [3, 2], 0],
      [[3, 4, 5], [2, 2, 1], 0],
      [[2, 3, 4, 5], [2, 3, 2], 1],
      [[2, 3, 4], [2, 3, 1], 2],
      [[5, 6], [2], 0],
    ] as const) {
      const g = gatherNdGeometry({ shape: data }, { shape: indices }, { batchDims });
      const lim = Math.min(...g.dims);
      out.push({
        name: `onnx_gather_nd ${dtype} [${data.join(',')}] indices [${indices.join(',')}] batchDims ${batchDims}`,
        op: 'onnx_gather_nd',
        args: {
          data: { shape: [...data], dtype },
          // Negative coordinates count from the end; the last one drawn may be out of range (NaN / 0).
          indices: { shape: [...indices], dtype: 'i32', range: 'index', min: -lim, max: lim + 1 },
          y: { shape: g.shape, dtype },
        },
        scalars: { batchDims },
        ...EXACT,
      });
    }
  return out;
}

export const onnxIndexGroup: OnnxOpGroup = {
  name: 'onnx-index',
  defs: [
    onnxArgReduceDef,
    onnxGatherElementsDef,
    onnxTriluDef,
    onnxCumsumDef,
    onnxHardmaxDef,
    onnxOnehotDef,
    onnxTopkDef,
    onnxGatherNdDef,
  ],
  impls: [
    { op: 'onnx_argreduce', backend: 'cpu', impl: onnxArgReduceCpu },
    { op: 'onnx_gather_elements', backend: 'cpu', impl: onnxGatherElementsCpu },
    { op: 'onnx_trilu', backend: 'cpu', impl: onnxTriluCpu },
    { op: 'onnx_cumsum', backend: 'cpu', impl: onnxCumsumCpu },
    { op: 'onnx_hardmax', backend: 'cpu', impl: onnxHardmaxCpu },
    { op: 'onnx_onehot', backend: 'cpu', impl: onnxOnehotCpu },
    { op: 'onnx_topk', backend: 'cpu', impl: onnxTopkCpu },
    { op: 'onnx_gather_nd', backend: 'cpu', impl: onnxGatherNdCpu },
    { op: 'onnx_argreduce', backend: 'cuda', impl: onnxArgReduceCuda },
    { op: 'onnx_gather_elements', backend: 'cuda', impl: onnxGatherElementsCuda },
    { op: 'onnx_trilu', backend: 'cuda', impl: onnxTriluCuda },
    { op: 'onnx_cumsum', backend: 'cuda', impl: onnxCumsumCuda },
    { op: 'onnx_hardmax', backend: 'cuda', impl: onnxHardmaxCuda },
    { op: 'onnx_onehot', backend: 'cuda', impl: onnxOnehotCuda },
    { op: 'onnx_topk', backend: 'cuda', impl: onnxTopkCuda },
    { op: 'onnx_gather_nd', backend: 'cuda', impl: onnxGatherNdCuda },
    { op: 'onnx_argreduce', backend: 'webgpu', impl: onnxArgReduceWebGpu },
    { op: 'onnx_gather_elements', backend: 'webgpu', impl: onnxGatherElementsWebGpu },
    { op: 'onnx_hardmax', backend: 'webgpu', impl: onnxHardmaxWebGpu },
    { op: 'onnx_onehot', backend: 'webgpu', impl: onnxOnehotWebGpu },
    { op: 'onnx_gather_nd', backend: 'webgpu', impl: onnxGatherNdWebGpu },
    { op: 'onnx_topk', backend: 'webgpu', impl: onnxTopkWebGpu },
    { op: 'onnx_cumsum', backend: 'webgpu', impl: onnxCumsumWebGpu },
    { op: 'onnx_trilu', backend: 'webgpu', impl: onnxTriluWebGpu },
  ],
  references: {
    onnx_argreduce: onnxArgReduceReference,
    onnx_gather_elements: onnxGatherElementsReference,
    onnx_trilu: onnxTriluReference,
    onnx_cumsum: onnxCumsumReference,
    onnx_hardmax: onnxHardmaxReference,
    onnx_onehot: onnxOnehotReference,
    onnx_topk: onnxTopkReference,
    onnx_gather_nd: onnxGatherNdReference,
  },
  cases: () => indexCases(),
};
