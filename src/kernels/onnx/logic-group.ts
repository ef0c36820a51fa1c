/**
 * The ONNX ops with bool (u8) results or conditions (comparisons, And/Or/Xor, IsInf/IsNaN, Where) as
 * an op group, with their conformance cases. WebGPU versions in webgpu-logic.ts.
 */
import type { ConformanceCase } from '../case-types.js';
import { COPY_DTYPES, FLOAT_DTYPES, type OnnxOpGroup } from './common.js';
import {
  COMPARE_OPS,
  onnxCompareCpu,
  onnxCompareCuda,
  onnxCompareDef,
  onnxCompareReference,
  onnxIsInfCpu,
  onnxIsInfCuda,
  onnxIsInfDef,
  onnxIsInfReference,
  onnxWhereCpu,
  onnxWhereCuda,
  onnxWhereDef,
  onnxWhereReference,
} from './compare.js';
import { broadcastShape } from './shapes.js';
import { onnxCompareWebGpu, onnxIsInfWebGpu, onnxWhereWebGpu } from './webgpu-logic.js';

const EXACT = { rtol: 0, atol: 0 };

/** Operand shapes; `ties` draws small integers (1..3) so that equal operands are common. */
const COMPARES: readonly (readonly [number[], number[], boolean])[] = [
  [[2, 3, 5], [2, 3, 5], true],
  [[2, 1, 5], [3, 1], false],
  [[], [3, 4], true],
  [[1, 3, 1, 5], [2, 1, 4, 1], false],
];

/** Finite values, both infinities and NaN (the cases of IsInf/IsNaN need them; random draws have none). */
const SPECIALS = [1.5, -Infinity, 0.25, Infinity, NaN, -3, -Infinity, 7, NaN, Infinity, -0.5, 2];

/** Condition, x and y shapes: all equal, three-way broadcasts, a scalar condition. */
const WHERES: readonly (readonly [number[], number[], number[]])[] = [
  [
    [2, 3, 5],
    [2, 3, 5],
    [2, 3, 5],
  ],
  [[3, 1], [2, 1, 5], [5]],
  [[], [3, 4], [1]],
  [
    [2, 1, 4, 1],
    [1, 3, 1, 5],
    [2, 3, 4, 5],
  ],
];

function logicCases(): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  for (const dtype of COPY_DTYPES) {
    for (const op of COMPARE_OPS)
      for (const [a, b, ties] of COMPARES) {
        const range = ties ? { range: 'index' as const, min: 1, max: 4 } : {};
        out.push({
          name: `onnx_compare ${op} ${dtype} [${a.join(',')}] [${b.join(',')}]`,
          op: 'onnx_compare',
          args: {
            a: { shape: a, dtype, ...range },
            b: { shape: b, dtype, ...range },
            c: { shape: broadcastShape('case', a, b), dtype: 'u8' },
          },
          scalars: { op },
          ...EXACT,
        });
      }
    for (const [k, x, y] of WHERES)
      out.push({
        name: `onnx_where ${dtype} [${k.join(',')}] [${x.join(',')}] [${y.join(',')}]`,
        op: 'onnx_where',
        args: {
          cond: { shape: k, dtype: 'u8', range: 'index', min: 0, max: 2 },
          x: { shape: x, dtype },
          y: { shape: y, dtype },
          z: { shape: broadcastShape('case', k, broadcastShape('case', x, y)), dtype },
        },
        scalars: {},
        ...EXACT,
      });
  }
  for (const dtype of FLOAT_DTYPES)
    for (const [label, scalars] of [
      ['isinf', { op: 'isinf' }],
      ['isinf positive', { op: 'isinf', detectNegative: false }],
      ['isinf negative', { op: 'isinf', detectPositive: false }],
      ['isnan', { op: 'isnan' }],
    ] as const)
      out.push({
        name: `onnx_isinf ${label} ${dtype}`,
        op: 'onnx_isinf',
        args: { x: { shape: [3, 4], dtype, values: SPECIALS }, y: { shape: [3, 4], dtype: 'u8' } },
        scalars,
        ...EXACT,
      });
  return out;
}

export const onnxLogicGroup: OnnxOpGroup = {
  name: 'onnx-logic',
  defs: [onnxCompareDef, onnxIsInfDef, onnxWhereDef],
  impls: [
    { op: 'onnx_compare', backend: 'cpu', impl: onnxCompareCpu },
    { op: 'onnx_isinf', backend: 'cpu', impl: onnxIsInfCpu },
    { op: 'onnx_where', backend: 'cpu', impl: onnxWhereCpu },
    { op: 'onnx_compare', backend: 'cuda', impl: onnxCompareCuda },
    { op: 'onnx_isinf', backend: 'cuda', impl: onnxIsInfCuda },
    { op: 'onnx_where', backend: 'cuda', impl: onnxWhereCuda },
    { op: 'onnx_compare', backend: 'webgpu', impl: onnxCompareWebGpu },
    { op: 'onnx_isinf', backend: 'webgpu', impl: onnxIsInfWebGpu },
    { op: 'onnx_where', backend: 'webgpu', impl: onnxWhereWebGpu },
  ],
  references: {
    onnx_compare: onnxCompareReference,
    onnx_isinf: onnxIsInfReference,
    onnx_where: onnxWhereReference,
  },
  cases: () => logicCases(),
};
