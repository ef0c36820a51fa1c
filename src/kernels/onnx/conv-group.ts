/** Convolution and pooling ONNX ops as an op group, with their conformance cases. */
import { onnxConvTransposeWebGpu, onnxConvWebGpu } from './webgpu-conv.js';
import { onnxGlobalPoolWebGpu, onnxPoolWebGpu } from './webgpu-compute.js';
import { epsilon, type DType } from '../../core/dtype.js';
import type { Scalars } from '../../devices/device.js';
import type { ConformanceCase } from '../case-types.js';
import { FLOAT_DTYPES, type OnnxOpGroup, sumTolerance } from './common.js';
import { onnxConvDef, onnxConvReference, onnxConvTransposeDef, onnxConvTransposeReference } from './conv.js';
import { onnxConvCpu, onnxConvTransposeCpu } from './conv-cpu.js';
import { onnxConvCuda, onnxConvTransposeCuda } from './conv-cuda.js';
import {
  onnxGlobalPoolCpu,
  onnxGlobalPoolCuda,
  onnxGlobalPoolDef,
  onnxGlobalPoolReference,
  onnxPoolCpu,
  onnxPoolCuda,
  onnxPoolDef,
  onnxPoolReference,
} from './pool.js';
import {
  convOutputShape,
  convTransposeOutputShape,
  fixedIntList,
  poolOutputShape,
  window2d,
} from './shapes.js';

/** PaddleOCR's chain after a conv: affine, hard-swish as Add/Clip/Mul/Div, affine. */
const OCR_EPILOGUE =
  'mul(r0,0.8125);add(r1,-0.1);add(r2,3);clip(r3,0,6);mul(r2,r4);div(r5,6);mul(r6,1.1);add(r7,0.05)';

interface ConvCase {
  readonly label: string;
  readonly x: readonly [number, number, number, number];
  /** O, kh, kw (the weight's channel count follows from x and group). */
  readonly o: number;
  readonly k: readonly [number, number];
  readonly scalars: Scalars;
}

/**
 * PaddleOCR's layer kinds (dense 3x3 stride 2, depthwise 5x5, pointwise 1x1, strides 2x1 and 1x2) plus
 * grouped, dilated and asymmetrically padded ones, and one too small for the CUDA GEMM path.
 */
const CONVS: readonly ConvCase[] = [
  {
    label: 'dense 3x3 s2 p1',
    x: [2, 3, 9, 8],
    o: 4,
    k: [3, 3],
    scalars: { strides: '2,2', pads: '1,1,1,1' },
  },
  { label: 'pointwise 1x1', x: [2, 6, 5, 7], o: 5, k: [1, 1], scalars: {} },
  {
    label: 'depthwise 5x5 s2 p2',
    x: [2, 4, 9, 7],
    o: 4,
    k: [5, 5],
    scalars: { group: 4, strides: '2,2', pads: '2,2,2,2' },
  },
  {
    label: 'depthwise 3x3 s2x1',
    x: [1, 3, 8, 6],
    o: 3,
    k: [3, 3],
    scalars: { group: 3, strides: '2,1', pads: '1,1,1,1' },
  },
  {
    label: 'grouped dilated asymmetric',
    x: [2, 4, 9, 10],
    o: 6,
    k: [3, 2],
    scalars: { group: 2, strides: '1,2', dilations: '2,1', pads: '0,1,2,1' },
  },
  {
    label: 'dense 3x3 + hard_swish',
    x: [1, 4, 6, 7],
    o: 5,
    k: [3, 3],
    scalars: { pads: '1,1,1,1', activation: 'hard_swish' },
  },
  {
    label: 'depthwise 3x3 + clip 0..0.25',
    x: [1, 4, 6, 5],
    o: 4,
    k: [3, 3],
    scalars: { group: 4, pads: '1,1,1,1', activation: 'clip', activationMin: 0, activationMax: 0.25 },
  },
  { label: 'one channel 3x3 (direct)', x: [2, 1, 6, 5], o: 3, k: [3, 3], scalars: { pads: '1,0,1,0' } },
  // CUDA paths: more than 32 output channels (im2col + GEMM); the tiled kernel over several 16x16 tiles
  // and shared-memory rounds of input channels (a partial last one), strided and dilated.
  { label: 'dense 3x3 O=40 (im2col GEMM)', x: [2, 5, 6, 5], o: 40, k: [3, 3], scalars: { pads: '1,1,1,1' } },
  {
    label: 'dense 3x3 tiles + ocr epilogue',
    x: [2, 20, 35, 33],
    o: 24,
    k: [3, 3],
    scalars: { pads: '1,1,1,1', epilogue: OCR_EPILOGUE },
  },
  {
    label: 'dense 3x3 s2x1 d2 asymmetric tiles',
    x: [1, 6, 23, 19],
    o: 7,
    k: [3, 3],
    scalars: { strides: '2,1', dilations: '2,2', pads: '2,1,1,2' },
  },
  // Epilogue programs (the executor's fused element-wise chains): the GEMM paths' batched products and
  // bias-in-epilogue pass, and the direct kernel with an activation before the program.
  {
    label: 'pointwise 1x1 + ocr epilogue',
    x: [3, 6, 5, 7],
    o: 5,
    k: [1, 1],
    scalars: { epilogue: OCR_EPILOGUE },
  },
  {
    label: 'dense 3x3 s2 + ocr epilogue',
    x: [3, 3, 9, 8],
    o: 4,
    k: [3, 3],
    scalars: { strides: '2,2', pads: '1,1,1,1', epilogue: OCR_EPILOGUE },
  },
  {
    label: 'depthwise 3x3 + leaky_relu + epilogue',
    x: [2, 4, 6, 5],
    o: 4,
    k: [3, 3],
    scalars: {
      group: 4,
      pads: '1,1,1,1',
      activation: 'leaky_relu',
      activationAlpha: 0.1,
      epilogue: 'mul(r0,r0);sub(r1,0.25)',
    },
  },
];

const CONV_TRANSPOSES: readonly ConvCase[] = [
  { label: '2x2 s2', x: [2, 4, 5, 6], o: 3, k: [2, 2], scalars: { strides: '2,2' } },
  {
    label: '2x2 s2 + relu',
    x: [1, 3, 4, 4],
    o: 2,
    k: [2, 2],
    scalars: { strides: '2,2', activation: 'relu' },
  },
  {
    label: '3x3 s2 p1 op1 g2 d1x2',
    x: [1, 4, 4, 5],
    o: 6,
    k: [3, 3],
    scalars: { group: 2, strides: '2,2', pads: '1,1,1,0', outputPadding: '1,1', dilations: '1,2' },
  },
  {
    label: '2x2 s2 + ocr epilogue',
    x: [2, 4, 5, 6],
    o: 3,
    k: [2, 2],
    scalars: { strides: '2,2', epilogue: OCR_EPILOGUE },
  },
];

/**
 * A fused activation on a half-precision conv: CUDA's dense path stores the GEMM's result in the
 * tensor's dtype and applies the activation to that (as PyTorch's conv then hardswish does), so the
 * pre-activation x is rounded once more. Where the activation is steep relative to its value (hard_swish
 * near its bend at x = -3: slope 0.5, value near 0) that rounding, |f'(x)|·|x|·eps/2, is an absolute
 * error of up to ~eps for |x| ≤ 4: seen on the H200 as 0.38 eps in f16 and bf16.
 */
function activatedTolerance(
  dtype: DType,
  scalars: Scalars,
  t: { rtol: number; atol: number },
): { rtol: number; atol: number } {
  const epilogue = scalars['epilogue'] !== undefined;
  if (epilogue) {
    // The programs above amplify an error at most ~4x (slopes ≤ 1.5 times the affine factors).
    t = { rtol: 4 * t.rtol, atol: 4 * t.atol };
  }
  if ((scalars['activation'] === undefined && !epilogue) || (dtype !== 'f16' && dtype !== 'bf16')) return t;
  return { rtol: t.rtol, atol: Math.max(t.atol, (epilogue ? 4 : 2) * epsilon(dtype)) };
}

/** TF32 GEMMs (f32 only): inputs rounded to 10-bit mantissas, so ~2·2⁻¹¹ relative per product. */
const TF32_CONVS: readonly ConvCase[] = [
  { label: 'pointwise 1x1 tf32', x: [3, 16, 5, 7], o: 5, k: [1, 1], scalars: { precision: 'tf32' } },
  {
    label: 'dense 3x3 tf32 + ocr epilogue',
    x: [2, 4, 6, 7],
    o: 6,
    k: [3, 3],
    scalars: { pads: '1,1,1,1', precision: 'tf32', epilogue: OCR_EPILOGUE },
  },
];

function convCases(): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  for (const s of TF32_CONVS) {
    const w = [s.o, s.x[1], ...s.k];
    const y = convOutputShape('case', s.x, w, window2d('case', s.scalars, s.k[0], s.k[1]));
    const terms = w[1]! * s.k[0] * s.k[1];
    out.push({
      name: `onnx_conv f32 ${s.label}`,
      op: 'onnx_conv',
      args: {
        x: { shape: s.x, dtype: 'f32' },
        w: { shape: w, dtype: 'f32' },
        b: { shape: [s.o], dtype: 'f32' },
        y: { shape: y, dtype: 'f32' },
      },
      scalars: s.scalars,
      // Products of inputs ≤ 1 each off by ≤ 2·2⁻¹¹; the epilogue amplifies at most ~4x.
      rtol: 4 * 2 ** -10,
      atol: 4 * terms * 2 ** -10,
    });
  }
  for (const dtype of FLOAT_DTYPES) {
    for (const s of CONVS) {
      const group = Number(s.scalars['group'] ?? 1);
      const w = [s.o, s.x[1] / group, ...s.k];
      const y = convOutputShape('case', s.x, w, window2d('case', s.scalars, s.k[0], s.k[1]));
      out.push({
        name: `onnx_conv ${dtype} ${s.label}`,
        op: 'onnx_conv',
        args: {
          x: { shape: s.x, dtype },
          w: { shape: w, dtype },
          b: { shape: [s.o], dtype },
          y: { shape: y, dtype },
        },
        scalars: s.scalars,
        ...activatedTolerance(dtype, s.scalars, sumTolerance(dtype, w[1]! * s.k[0] * s.k[1] + 1)),
      });
    }
    for (const s of CONV_TRANSPOSES) {
      const group = Number(s.scalars['group'] ?? 1);
      const w = [s.x[1], s.o / group, ...s.k];
      const win = window2d('case', s.scalars, s.k[0], s.k[1]);
      const outputPadding = fixedIntList('case', s.scalars, 'outputPadding', 2, 0, [0, 0]);
      const y = convTransposeOutputShape('case', s.x, w, group, win, outputPadding);
      out.push({
        name: `onnx_conv_transpose ${dtype} ${s.label}`,
        op: 'onnx_conv_transpose',
        args: {
          x: { shape: s.x, dtype },
          w: { shape: w, dtype },
          b: { shape: [s.o], dtype },
          y: { shape: y, dtype },
        },
        scalars: s.scalars,
        ...activatedTolerance(dtype, s.scalars, sumTolerance(dtype, (s.x[1] / group) * s.k[0] * s.k[1] + 1)),
      });
    }
  }
  return out;
}

interface PoolCase {
  readonly label: string;
  readonly x: readonly [number, number, number, number];
  readonly scalars: Scalars & { kernel: string };
}

/** PaddleOCR-rec's 3x2 stride 3x2 average pool; padded, dilated, ceil-mode windows of both kinds. */
const POOLS: readonly PoolCase[] = [
  {
    label: 'max 3x3 s2 p1',
    x: [2, 3, 9, 8],
    scalars: { op: 'max', kernel: '3,3', strides: '2,2', pads: '1,1,1,1' },
  },
  { label: 'avg 3x2 s3x2', x: [2, 4, 9, 10], scalars: { op: 'avg', kernel: '3,2', strides: '3,2' } },
  {
    label: 'avg 3x3 s2 p1 ceil include-pad',
    x: [1, 3, 8, 7],
    scalars: {
      op: 'avg',
      kernel: '3,3',
      strides: '2,2',
      pads: '1,1,1,1',
      ceilMode: true,
      countIncludePad: true,
    },
  },
  {
    label: 'avg 3x3 s2 p(1,0,0,1) ceil',
    x: [1, 2, 8, 9],
    scalars: { op: 'avg', kernel: '3,3', strides: '2,2', pads: '1,0,0,1', ceilMode: true },
  },
  {
    label: 'max 2x3 s2 d2 ceil',
    x: [2, 2, 9, 10],
    scalars: { op: 'max', kernel: '2,3', strides: '2,2', dilations: '2,2', ceilMode: true },
  },
];

function poolCases(): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  for (const dtype of FLOAT_DTYPES) {
    for (const s of POOLS) {
      const [kh, kw] = fixedIntList('case', s.scalars, 'kernel', 2, 1, []) as [number, number];
      const y = poolOutputShape(
        'case',
        s.x,
        window2d('case', s.scalars, kh, kw),
        s.scalars['ceilMode'] === true,
      );
      out.push({
        name: `onnx_pool ${dtype} ${s.label}`,
        op: 'onnx_pool',
        args: { x: { shape: s.x, dtype }, y: { shape: y, dtype } },
        scalars: s.scalars,
        ...(s.scalars.op === 'max' ? { rtol: 0, atol: 0 } : sumTolerance(dtype, kh * kw)),
      });
    }
    for (const op of ['avg', 'max']) {
      for (const x of [
        [2, 3, 5, 7],
        [1, 4, 300],
      ]) {
        const y = [x[0]!, x[1]!, ...x.slice(2).map(() => 1)];
        const size = x.slice(2).reduce((a, b) => a * b, 1);
        out.push({
          name: `onnx_global_pool ${op} ${dtype as DType} [${x.join(',')}]`,
          op: 'onnx_global_pool',
          args: { x: { shape: x, dtype }, y: { shape: y, dtype } },
          scalars: { op },
          ...(op === 'max' ? { rtol: 0, atol: 0 } : sumTolerance(dtype, size)),
        });
      }
    }
  }
  return out;
}

export const onnxConvGroup: OnnxOpGroup = {
  name: 'onnx-conv',
  defs: [onnxConvDef, onnxConvTransposeDef, onnxPoolDef, onnxGlobalPoolDef],
  impls: [
    { op: 'onnx_conv', backend: 'cpu', impl: onnxConvCpu },
    { op: 'onnx_conv_transpose', backend: 'cpu', impl: onnxConvTransposeCpu },
    { op: 'onnx_pool', backend: 'cpu', impl: onnxPoolCpu },
    { op: 'onnx_global_pool', backend: 'cpu', impl: onnxGlobalPoolCpu },
    { op: 'onnx_conv', backend: 'cuda', impl: onnxConvCuda },
    { op: 'onnx_conv_transpose', backend: 'cuda', impl: onnxConvTransposeCuda },
    { op: 'onnx_pool', backend: 'cuda', impl: onnxPoolCuda },
    { op: 'onnx_global_pool', backend: 'cuda', impl: onnxGlobalPoolCuda },
    { op: 'onnx_conv', backend: 'webgpu', impl: onnxConvWebGpu },
    { op: 'onnx_conv_transpose', backend: 'webgpu', impl: onnxConvTransposeWebGpu },
    { op: 'onnx_pool', backend: 'webgpu', impl: onnxPoolWebGpu },
    { op: 'onnx_global_pool', backend: 'webgpu', impl: onnxGlobalPoolWebGpu },
  ],
  references: {
    onnx_conv: onnxConvReference,
    onnx_conv_transpose: onnxConvTransposeReference,
    onnx_pool: onnxPoolReference,
    onnx_global_pool: onnxGlobalPoolReference,
  },
  cases: () => [...convCases(), ...poolCases()],
};
