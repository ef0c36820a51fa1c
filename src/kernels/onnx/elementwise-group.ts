/** The element-wise ONNX ops as an op group, with their conformance cases. */
import { onnxMapWebGpu } from './webgpu-map.js';
import type { DType } from '../../core/dtype.js';
import type { ConformanceCase, ValueRange } from '../case-types.js';
import { elementTolerance, FLOAT_DTYPES, type OnnxOpGroup } from './common.js';
import {
  onnxBinaryCpu,
  onnxBinaryCuda,
  onnxBinaryDef,
  onnxBinaryReference,
  onnxUnaryCpu,
  onnxUnaryCuda,
  onnxUnaryDef,
  onnxUnaryReference,
} from './elementwise.js';
import { BINARY_OPS, UNARY_OPS, type UnaryOp } from './elementwise-ops.js';
import { onnxMapCpu, onnxMapCuda, onnxMapDef, onnxMapReference } from './map.js';
import { onnxBinaryWebGpu, onnxUnaryWebGpu } from './webgpu.js';
import { broadcastShape } from './shapes.js';

/** Same shapes, a trailing vector, two-sided broadcasts, a scalar, a per-channel NCHW operand, rank 6. */
const BROADCASTS: readonly (readonly [number[], number[]])[] = [
  [
    [2, 3, 5],
    [2, 3, 5],
  ],
  [[2, 3, 5], [5]],
  [
    [2, 1, 5],
    [3, 1],
  ],
  [[], [3, 4]],
  [
    [2, 4, 3, 5],
    [1, 4, 1, 1],
  ],
  [
    [1, 3, 1, 5],
    [2, 1, 4, 1],
  ],
  [
    [2, 1, 2, 3, 1, 2],
    [2, 1, 3, 2, 1],
  ],
];

function binaryCases(): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  for (const dtype of FLOAT_DTYPES) {
    for (const op of BINARY_OPS) {
      for (const [a, b] of BROADCASTS) {
        const c = broadcastShape('case', a, b);
        // pow on a negative base with a fractional exponent is NaN everywhere; keep the base positive.
        const range: ValueRange = op === 'pow' ? 'positive' : 'signed';
        out.push({
          name: `onnx_binary ${op} ${dtype} [${a.join(',')}] [${b.join(',')}]`,
          op: 'onnx_binary',
          args: { a: { shape: a, dtype, range }, b: { shape: b, dtype }, c: { shape: c, dtype } },
          scalars: { op },
          ...elementTolerance(dtype, op === 'pow' ? 8 : 2),
        });
      }
    }
  }
  return out;
}

/** Scalars that make each op's case meaningful (ONNX's defaults otherwise). */
const UNARY_SCALARS: Partial<Record<UnaryOp, Record<string, number>>> = {
  leaky_relu: { alpha: 0.1 },
  hard_sigmoid: { alpha: 1 / 6, beta: 0.5 },
  clip: { min: -0.5, max: 0.75 },
  elu: { alpha: 0.7 },
  thresholded_relu: { alpha: 0.25 },
  shrink: { alpha: 0.375, beta: 0.25 },
};

const POSITIVE_ONLY: readonly UnaryOp[] = ['sqrt', 'log'];
/**
 * Ops whose inputs should reach the bends of the function (hard_sigmoid saturates at ±3), cross many
 * integers (round, floor, ceil) or mostly lie in the domain (acosh: x ≥ 1; the rest are NaN on every backend).
 */
const WIDE: readonly UnaryOp[] = ['hard_sigmoid', 'hard_swish', 'round', 'acosh', 'floor', 'ceil'];

function unaryCases(): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  for (const dtype of FLOAT_DTYPES) {
    for (const op of UNARY_OPS) {
      const range: ValueRange = POSITIVE_ONLY.includes(op)
        ? 'positive'
        : WIDE.includes(op)
          ? 'wide'
          : 'signed';
      const shape = [3, 5, 7];
      out.push({
        name: `onnx_unary ${op} ${dtype}`,
        op: 'onnx_unary',
        args: { x: { shape, dtype, range }, y: { shape, dtype } },
        scalars: { op, ...UNARY_SCALARS[op] },
        ...elementTolerance(dtype as DType, dtype === 'f64' ? 16 : 4),
      });
    }
  }
  return out;
}

/**
 * onnx_map programs: PaddleOCR's chain after a conv (affine, hard-swish spelled out, affine), every
 * binary op and the parameterised unary ops with constants on either side and registers read twice,
 * and the empty program (a copy).
 */
export const MAP_PROGRAMS: readonly (readonly [string, string, ValueRange])[] = [
  [
    'ocr chain',
    'mul(r0,0.8125);add(r1,-0.1);add(r2,3);clip(r3,0,6);mul(r2,r4);div(r5,6);mul(r6,1.1);add(r7,0.05)',
    'wide',
  ],
  [
    'all binary',
    'sub(1.5,r0);max(r1,r0);min(r2,0.5);mul(r0,r3);div(r4,1.25);add(r5,r1);pow(r6,2);sub(r7,r0)',
    'signed',
  ],
  [
    'unary params',
    'hard_sigmoid(r0,0.2,0.5);leaky_relu(r0,0.1);elu(r2,0.7);clip(r3,-Infinity,0.3);mul(r1,r4);sigmoid(r5);relu(r0);add(r6,r7);hard_swish(r8)',
    'wide',
  ],
  [
    'new unary',
    'thresholded_relu(r0,0.3);round(r0);asinh(r0);cosh(r0);mul(r0,0.875);atanh(r5);abs(r0);add(r7,1);acosh(r8);add(r1,r2);add(r10,r3);add(r11,r6);add(r12,r9);sinh(r0);mul(r0,4);floor(r15);ceil(r15);sign(r0);add(r13,r14);add(r19,r16);add(r20,r17);add(r21,r18);add(r22,r4);shrink(r0,0.4,0.1);add(r23,r24)',
    'signed',
  ],
  ['empty', '', 'signed'],
];

function mapCases(): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  for (const dtype of FLOAT_DTYPES) {
    for (const [label, program, range] of MAP_PROGRAMS) {
      const shape = [2, 3, 5, 7];
      const instrs = program === '' ? 0 : program.split(';').length;
      out.push({
        name: `onnx_map ${label} ${dtype}`,
        op: 'onnx_map',
        args: { x: { shape, dtype, range }, y: { shape, dtype } },
        scalars: { program },
        ...elementTolerance(dtype as DType, 2 * instrs + 2),
      });
    }
  }
  return out;
}

export const onnxElementwiseGroup: OnnxOpGroup = {
  name: 'onnx-elementwise',
  defs: [onnxBinaryDef, onnxUnaryDef, onnxMapDef],
  impls: [
    { op: 'onnx_binary', backend: 'cpu', impl: onnxBinaryCpu },
    { op: 'onnx_unary', backend: 'cpu', impl: onnxUnaryCpu },
    { op: 'onnx_binary', backend: 'cuda', impl: onnxBinaryCuda },
    { op: 'onnx_unary', backend: 'cuda', impl: onnxUnaryCuda },
    { op: 'onnx_map', backend: 'cpu', impl: onnxMapCpu },
    { op: 'onnx_map', backend: 'cuda', impl: onnxMapCuda },
    { op: 'onnx_map', backend: 'webgpu', impl: onnxMapWebGpu },
    { op: 'onnx_binary', backend: 'webgpu', impl: onnxBinaryWebGpu },
    { op: 'onnx_unary', backend: 'webgpu', impl: onnxUnaryWebGpu },
  ],
  references: {
    onnx_binary: onnxBinaryReference,
    onnx_unary: onnxUnaryReference,
    onnx_map: onnxMapReference,
  },
  cases: () => [...binaryCases(), ...unaryCases(), ...mapCases()],
};
