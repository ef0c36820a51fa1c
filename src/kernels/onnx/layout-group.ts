/** The data-movement ONNX ops as an op group, with their conformance cases. */
import {
  onnxConcatWebGpu,
  onnxExpandWebGpu,
  onnxGatherWebGpu,
  onnxPadWebGpu,
  onnxSliceWebGpu,
  onnxTransposeWebGpu,
} from './webgpu-layout.js';
import type { DType } from '../../core/dtype.js';
import type { Scalars } from '../../devices/device.js';
import type { ConformanceCase } from '../case-types.js';
import { COPY_DTYPES, type OnnxOpGroup } from './common.js';
import {
  onnxGatherCpu,
  onnxGatherCuda,
  onnxGatherDef,
  onnxGatherReference,
  onnxPadCpu,
  onnxPadCuda,
  onnxPadDef,
  onnxPadReference,
} from './gather-pad.js';
import {
  concatPlan,
  expandPlan,
  onnxConcatDef,
  onnxConcatReference,
  onnxExpandDef,
  onnxExpandReference,
  onnxSliceDef,
  onnxSliceReference,
  onnxTransposeDef,
  onnxTransposeReference,
  slicePlan,
  transposePlan,
} from './layout.js';
import { sliceGeometry } from './shapes.js';
import { stridedCpu, stridedCuda } from './strided.js';

/** Copies are exact: every case must match bit for bit. */
const EXACT = { rtol: 0, atol: 0 };

function copyCase(
  op: string,
  label: string,
  dtype: DType,
  x: number[],
  y: number[],
  scalars: Scalars,
  xName = 'x',
): ConformanceCase {
  return {
    name: `${op} ${dtype} ${label}`,
    op,
    args: { [xName]: { shape: x, dtype }, y: { shape: y, dtype } },
    scalars,
    ...EXACT,
  };
}

/** PaddleOCR-rec's permutations (rank 3 to 5) and a rank-6 one. */
const PERMS: readonly (readonly [number[], string])[] = [
  [[2, 3, 4], '0,2,1'],
  [[2, 3, 4, 5, 2], '2,0,3,1,4'],
  [[2, 3, 4, 5], '0,3,1,2'],
  [[2, 1, 3, 2, 2, 3], '5,4,3,2,1,0'],
];

const SLICES: readonly (readonly [number[], Scalars])[] = [
  [[5, 6], { starts: '1,0', ends: '4,6' }],
  [[4, 5, 6], { starts: '-1', ends: '-100', axes: '2', steps: '-2' }],
  [[4, 5, 6], { starts: '0,1', ends: '100,-1', axes: '-1,0', steps: '3,2' }],
  [[3, 8], { starts: '2', ends: '2', axes: '0' }],
];

function layoutCases(): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  for (const dtype of COPY_DTYPES) {
    for (const [x, perm] of PERMS) {
      const y = perm.split(',').map((p) => x[Number(p)]!);
      out.push(copyCase('onnx_transpose', `[${x.join(',')}] perm ${perm}`, dtype, x, y, { perm }));
    }
    for (const [x, s] of SLICES) {
      const y = sliceGeometry('case', x, s).shape;
      out.push(copyCase('onnx_slice', `[${x.join(',')}] ${JSON.stringify(s)}`, dtype, x, y, s));
    }
    for (const [x, y, axis, offset] of [
      [[2, 3, 4], [2, 7, 4], 1, 3],
      [[2, 3], [5, 3], 0, 0],
      [[2, 3, 1], [2, 3, 4], -1, 3],
    ] as const) {
      out.push({
        name: `onnx_concat ${dtype} [${x.join(',')}] into [${y.join(',')}] axis ${axis} at ${offset}`,
        op: 'onnx_concat',
        args: { x: { shape: [...x], dtype }, y: { shape: [...y], dtype } },
        scalars: { axis, offset },
        ...EXACT,
      });
    }
    for (const [x, y] of [
      [
        [3, 1],
        [2, 3, 4],
      ],
      [[], [2, 3]],
      [
        [1, 4, 1, 1],
        [2, 4, 3, 3],
      ],
    ]) {
      out.push(copyCase('onnx_expand', `[${x!.join(',')}] to [${y!.join(',')}]`, dtype, x!, y!, {}));
    }
    for (const [data, indices, axis] of [
      [[5, 3], [2, 4], 0],
      [[2, 6, 3], [4], 1],
      [[2, 3, 7], [], 2],
    ] as const) {
      const a = axis;
      const y = [...data.slice(0, a), ...indices, ...data.slice(a + 1)];
      out.push({
        name: `onnx_gather ${dtype} [${data.join(',')}] indices [${indices.join(',')}] axis ${axis}`,
        op: 'onnx_gather',
        args: {
          data: { shape: [...data], dtype },
          // Negative indices count from the end; the last one drawn may be out of range (NaN / 0 rows).
          indices: { shape: [...indices], dtype: 'i32', range: 'index', min: -data[a]!, max: data[a]! + 1 },
          y: { shape: y, dtype },
        },
        scalars: { axis },
        ...EXACT,
      });
    }
    for (const mode of ['constant', 'reflect', 'edge']) {
      for (const [x, pads] of [
        [[2, 3, 4, 5], '0,0,1,2,0,0,2,1'],
        [[4, 6], '2,-1,1,3'],
      ] as const) {
        const p = pads.split(',').map(Number);
        const y = x.map((d, i) => d + p[i]! + p[x.length + i]!);
        const scalars = { mode, pads, value: dtype === 'i32' || dtype === 'u8' ? 7 : 0.5 };
        out.push(copyCase('onnx_pad', `${mode} [${x.join(',')}] pads ${pads}`, dtype, [...x], y, scalars));
      }
    }
  }
  return out;
}

export const onnxLayoutGroup: OnnxOpGroup = {
  name: 'onnx-layout',
  defs: [onnxTransposeDef, onnxSliceDef, onnxConcatDef, onnxExpandDef, onnxGatherDef, onnxPadDef],
  impls: [
    { op: 'onnx_transpose', backend: 'cpu', impl: stridedCpu(transposePlan) },
    { op: 'onnx_slice', backend: 'cpu', impl: stridedCpu(slicePlan) },
    { op: 'onnx_concat', backend: 'cpu', impl: stridedCpu(concatPlan) },
    { op: 'onnx_expand', backend: 'cpu', impl: stridedCpu(expandPlan) },
    { op: 'onnx_gather', backend: 'cpu', impl: onnxGatherCpu },
    { op: 'onnx_pad', backend: 'cpu', impl: onnxPadCpu },
    { op: 'onnx_transpose', backend: 'cuda', impl: stridedCuda(transposePlan) },
    { op: 'onnx_slice', backend: 'cuda', impl: stridedCuda(slicePlan) },
    { op: 'onnx_concat', backend: 'cuda', impl: stridedCuda(concatPlan) },
    { op: 'onnx_expand', backend: 'cuda', impl: stridedCuda(expandPlan) },
    { op: 'onnx_gather', backend: 'cuda', impl: onnxGatherCuda },
    { op: 'onnx_pad', backend: 'cuda', impl: onnxPadCuda },
    { op: 'onnx_gather', backend: 'webgpu', impl: onnxGatherWebGpu },
    { op: 'onnx_pad', backend: 'webgpu', impl: onnxPadWebGpu },
    { op: 'onnx_transpose', backend: 'webgpu', impl: onnxTransposeWebGpu },
    { op: 'onnx_slice', backend: 'webgpu', impl: onnxSliceWebGpu },
    { op: 'onnx_concat', backend: 'webgpu', impl: onnxConcatWebGpu },
    { op: 'onnx_expand', backend: 'webgpu', impl: onnxExpandWebGpu },
  ],
  references: {
    onnx_transpose: onnxTransposeReference,
    onnx_slice: onnxSliceReference,
    onnx_concat: onnxConcatReference,
    onnx_expand: onnxExpandReference,
    onnx_gather: onnxGatherReference,
    onnx_pad: onnxPadReference,
  },
  cases: () => layoutCases(),
};
