/** Normalization and softmax ONNX ops as an op group, with their conformance cases. */
import { onnxSoftmaxWebGpu } from './webgpu-compute.js';
import { onnxBatchnormWebGpu, onnxLayernormWebGpu } from './webgpu-norm.js';
import type { ConformanceCase } from '../case-types.js';
import { elementTolerance, FLOAT_DTYPES, type OnnxOpGroup, sumTolerance } from './common.js';
import {
  onnxBatchnormCpu,
  onnxBatchnormCuda,
  onnxBatchnormDef,
  onnxBatchnormReference,
  onnxLayernormCpu,
  onnxLayernormCuda,
  onnxLayernormDef,
  onnxLayernormReference,
  onnxSoftmaxCpu,
  onnxSoftmaxCuda,
  onnxSoftmaxDef,
  onnxSoftmaxReference,
} from './norm.js';

function batchnormCases(): ConformanceCase[] {
  return FLOAT_DTYPES.flatMap((dtype) =>
    [
      [2, 3, 5, 7],
      [4, 6],
      [2, 3, 4],
    ].map((x): ConformanceCase => ({
      name: `onnx_batchnorm ${dtype} [${x.join(',')}]`,
      op: 'onnx_batchnorm',
      args: {
        x: { shape: x, dtype },
        scale: { shape: [x[1]!], dtype },
        bias: { shape: [x[1]!], dtype },
        mean: { shape: [x[1]!], dtype },
        var: { shape: [x[1]!], dtype, range: 'positive' },
        y: { shape: x, dtype },
      },
      scalars: { epsilon: 1e-3 },
      ...elementTolerance(dtype, 8),
    })),
  );
}

/** Last axis, two trailing axes with scale given flat, axis 0 (one row); one wide row for the block sums. */
const LAYERNORMS = [
  { x: [4, 6, 10], axis: -1, scale: [10] },
  { x: [3, 4, 5], axis: 1, scale: [20] },
  { x: [3, 4, 5], axis: -2, scale: [4, 5] },
  { x: [2, 700], axis: 1, scale: [700] },
];

function layernormCases(): ConformanceCase[] {
  return FLOAT_DTYPES.flatMap((dtype) =>
    LAYERNORMS.map((s): ConformanceCase => ({
      name: `onnx_layernorm ${dtype} [${s.x.join(',')}] axis ${s.axis} scale [${s.scale.join(',')}]`,
      op: 'onnx_layernorm',
      args: {
        x: { shape: s.x, dtype },
        scale: { shape: s.scale, dtype },
        bias: { shape: s.scale, dtype },
        y: { shape: s.x, dtype },
      },
      scalars: { axis: s.axis, epsilon: 1e-5 },
      // Normalized values reach a few units: the sums' error scaled by rstd.
      ...sumTolerance(dtype, 4 * s.scale.reduce((a, b) => a * b, 1)),
    })),
  );
}

const SOFTMAXES = [
  { x: [3, 4, 5], axis: -1 },
  { x: [3, 4, 5], axis: 0 },
  { x: [3, 4, 5], axis: 1 },
  { x: [2, 300], axis: 1 },
];

function softmaxCases(): ConformanceCase[] {
  return FLOAT_DTYPES.flatMap((dtype) =>
    SOFTMAXES.flatMap((s) =>
      [false, true].map((log): ConformanceCase => ({
        name: `onnx_softmax ${dtype} [${s.x.join(',')}] axis ${s.axis}${log ? ' log' : ''}`,
        op: 'onnx_softmax',
        args: { x: { shape: s.x, dtype }, y: { shape: s.x, dtype } },
        scalars: { axis: s.axis, log },
        ...elementTolerance(dtype, 8 + s.x[s.axis < 0 ? s.x.length + s.axis : s.axis]!),
      })),
    ),
  );
}

export const onnxNormGroup: OnnxOpGroup = {
  name: 'onnx-norm',
  defs: [onnxBatchnormDef, onnxLayernormDef, onnxSoftmaxDef],
  impls: [
    { op: 'onnx_batchnorm', backend: 'cpu', impl: onnxBatchnormCpu },
    { op: 'onnx_layernorm', backend: 'cpu', impl: onnxLayernormCpu },
    { op: 'onnx_softmax', backend: 'cpu', impl: onnxSoftmaxCpu },
    { op: 'onnx_batchnorm', backend: 'cuda', impl: onnxBatchnormCuda },
    { op: 'onnx_layernorm', backend: 'cuda', impl: onnxLayernormCuda },
    { op: 'onnx_softmax', backend: 'cuda', impl: onnxSoftmaxCuda },
    { op: 'onnx_batchnorm', backend: 'webgpu', impl: onnxBatchnormWebGpu },
    { op: 'onnx_layernorm', backend: 'webgpu', impl: onnxLayernormWebGpu },
    { op: 'onnx_softmax', backend: 'webgpu', impl: onnxSoftmaxWebGpu },
  ],
  references: {
    onnx_batchnorm: onnxBatchnormReference,
    onnx_layernorm: onnxLayernormReference,
    onnx_softmax: onnxSoftmaxReference,
  },
  cases: () => [...batchnormCases(), ...layernormCases(), ...softmaxCases()],
};
