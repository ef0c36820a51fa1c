/**
 * image_normalize: uint8 pixels as images arrive (N×H×W×3, RGB, interleaved) to a network's float input
 * (N×3×H×W, planar), y[n,c,h,w] = (x[n,h,w,src(c)]·scale − mean[c]) / std[c] with src(c) = c for an RGB
 * model and 2 − c for a BGR one. Done on the device as the first task of a served image model's batch, so
 * an image crosses HTTP and the host-to-device copy as 1 byte per value instead of 4 (torchvision's
 * ToTensor + Normalize, PaddleOCR's NormalizeImage + ToCHWImage, in one pass).
 *
 * Every backend computes in double and rounds once at the store, so the CPU, CUDA and the float64
 * reference agree to the output dtype's rounding.
 */
import { TandemError } from '../../core/errors.js';
import type { Scalars } from '../../devices/device.js';
import { checkScalarNames, enumScalar, numberScalar } from '../common/scalars.js';

export const IMAGE_NORMALIZE_SCALARS = [
  'scale',
  'mean0',
  'mean1',
  'mean2',
  'std0',
  'std1',
  'std2',
  'channels',
] as const;

export type ChannelOrder = 'rgb' | 'bgr';

export interface ImageNormalizeParams {
  readonly scale: number;
  /** Per model input channel c (in the model's order). */
  readonly mean: readonly [number, number, number];
  readonly std: readonly [number, number, number];
  readonly channels: ChannelOrder;
}

export function imageNormalizeParams(op: string, scalars: Scalars): ImageNormalizeParams {
  checkScalarNames(op, scalars, IMAGE_NORMALIZE_SCALARS);
  const num = (name: string, fallback: number) => numberScalar(op, scalars, name, fallback);
  const std = [num('std0', 1), num('std1', 1), num('std2', 1)] as const;
  if (std.some((s) => s === 0))
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `${op}: std must not be 0, got [${std.join(', ')}]`,
      {
        op,
      },
    );
  return {
    scale: num('scale', 1 / 255),
    mean: [num('mean0', 0), num('mean1', 0), num('mean2', 0)],
    std,
    channels: enumScalar(op, scalars, 'channels', ['rgb', 'bgr'], 'rgb'),
  };
}

/** The scalars of a call with `p` (the inverse of imageNormalizeParams). */
export function imageNormalizeScalars(p: ImageNormalizeParams): Scalars {
  return {
    scale: p.scale,
    mean0: p.mean[0],
    mean1: p.mean[1],
    mean2: p.mean[2],
    std0: p.std[0],
    std1: p.std[1],
    std2: p.std[2],
    channels: p.channels,
  };
}

/** The pixel channel (0 R, 1 G, 2 B) that model channel c reads. */
export function sourceChannel(p: ImageNormalizeParams, c: number): number {
  return p.channels === 'rgb' ? c : 2 - c;
}

/**
 * Writes every value of `y` (planar, N×3×H×W, as numbers in double) from `x` (N×H×W×3 bytes): the one
 * formula the CPU kernel and the reference share.
 */
export function normalizeInto(
  p: ImageNormalizeParams,
  x: ArrayLike<number>,
  y: { [i: number]: number },
  n: number,
  hw: number,
): void {
  for (let c = 0; c < 3; c++) {
    const src = sourceChannel(p, c);
    const scale = p.scale;
    const mean = p.mean[c]!;
    const std = p.std[c]!;
    for (let b = 0; b < n; b++) {
      const xo = b * hw * 3 + src;
      const yo = (b * 3 + c) * hw;
      for (let i = 0; i < hw; i++) y[yo + i] = (x[xo + 3 * i]! * scale - mean) / std;
    }
  }
}
