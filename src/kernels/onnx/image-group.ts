/**
 * image_normalize as an op group (joined to the ONNX groups: it feeds served ONNX image models), with
 * its conformance cases. No WebGPU version: a run placed on WebGPU runs it on its fallback device
 * (src/onnx/fallback.ts; a served model's are its placement's other kinds).
 */
import { type DType, epsilon } from '../../core/dtype.js';
import type { ConformanceCase } from '../case-types.js';
import type { OnnxOpGroup } from './common.js';
import { imageNormalizeCpu } from '../image_normalize/cpu.js';
import { imageNormalizeCuda } from '../image_normalize/cuda.js';
import { imageNormalizeDef } from '../image_normalize/def.js';
import { imageNormalizeScalars } from '../image_normalize/params.js';
import { imageNormalizeReference } from '../image_normalize/reference.js';

/** PaddleOCR's detector: ImageNet mean and std on pixels scaled to [0, 1]. */
const PADDLE = imageNormalizeScalars({
  scale: 1 / 255,
  mean: [0.485, 0.456, 0.406],
  std: [0.229, 0.224, 0.225],
  channels: 'rgb',
});

const VARIANTS = [
  { label: 'paddle rgb', scalars: PADDLE },
  { label: 'paddle bgr', scalars: { ...PADDLE, channels: 'bgr' } },
  // Caffe-style: raw 0..255 values minus per-channel means, std 1 (defaults for std).
  {
    label: 'caffe bgr',
    scalars: { scale: 1, mean0: 103.94, mean1: 116.78, mean2: 123.68, channels: 'bgr' },
  },
] as const;

/** Odd sizes (no multiple of a block), a batch, and one image of several blocks' worth of pixels. */
const SHAPES: readonly (readonly number[])[] = [
  [1, 5, 7, 3],
  [2, 3, 33, 3],
  [3, 40, 96, 3],
];

function cases(): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  for (const dtype of ['f32', 'f64', 'f16', 'bf16'] as const satisfies readonly DType[])
    for (const v of VARIANTS)
      for (const [n, h, w] of SHAPES)
        out.push({
          name: `image_normalize ${dtype} ${v.label} [${n},${h},${w},3]`,
          op: 'image_normalize',
          args: {
            // Every byte value, 0 and 255 included.
            x: { shape: [n!, h!, w!, 3], dtype: 'u8', range: 'index', min: 0, max: 256 },
            y: { shape: [n!, 3, h!, w!], dtype },
          },
          scalars: v.scalars,
          // Computed in double and rounded once at the store (16-bit through f32, on both backends).
          rtol: epsilon(dtype),
          atol: 1e-3 * epsilon(dtype),
        });
  return out;
}

export const imageNormalizeGroup: OnnxOpGroup = {
  name: 'image-normalize',
  defs: [imageNormalizeDef],
  impls: [
    { op: 'image_normalize', backend: 'cpu', impl: imageNormalizeCpu },
    { op: 'image_normalize', backend: 'cuda', impl: imageNormalizeCuda },
  ],
  references: { image_normalize: imageNormalizeReference },
  cases,
};
