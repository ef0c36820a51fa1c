/**
 * image_normalize on CUDA: one thread per pixel (grid-stride) reads its 3 bytes and writes one value into
 * each of the 3 planes, computed in double as params.ts does (the store rounds once, like the CPU's).
 * The channel order is a compile-time define, so an RGB and a BGR model are two cached programs.
 */
import type { CudaProgram } from '../../devices/cuda/kernel-api.js';
import { BLOCK_DIM, GRID_STRIDE, elementwiseGrid } from '../common/cuda.js';
import { imageNormalizeParams } from './params.js';

const SOURCE = `extern "C" __global__ void tdm_image_normalize(const unsigned char* __restrict__ x,
    Y_t* __restrict__ y, long long n, long long hw, double scale, double m0, double m1, double m2,
    double s0, double s1, double s2) {
  ${GRID_STRIDE} {
    const long long b = i / hw;
    const unsigned char* px = x + 3 * i;
    Y_t* out = y + 2 * b * hw + i;  // y[b, 0, p] with p = i - b * hw: (3b)·hw + p
#if TDM_BGR
    const double c0 = (double)px[2], c2 = (double)px[0];
#else
    const double c0 = (double)px[0], c2 = (double)px[2];
#endif
    // __dmul_rn keeps the product rounded on its own (no FMA contraction), as the CPU and the float64
    // reference compute it: an f64 result is then the same to the last bit (the H200 found 1-2 ULP).
    stY(out, 0, (__dmul_rn(c0, scale) - m0) / s0);
    stY(out, hw, (__dmul_rn((double)px[1], scale) - m1) / s1);
    stY(out, 2 * hw, (__dmul_rn(c2, scale) - m2) / s2);
  }
}`;

const pixels = (shape: readonly number[]): number => shape[0]! * shape[1]! * shape[2]!;

export const imageNormalizeCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_image_normalize',
  source: SOURCE,
  dtypes: (args) => ({ Y: args[1]!.desc.dtype }),
  defines: (_args, scalars) => ({
    TDM_BGR: imageNormalizeParams('image_normalize', scalars).channels === 'bgr' ? 1 : 0,
  }),
  grid: (args) => elementwiseGrid(pixels(args[0]!.desc.shape)),
  block: () => BLOCK_DIM,
  params(args, scalars) {
    const p = imageNormalizeParams('image_normalize', scalars);
    const [, h, w] = args[0]!.desc.shape;
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      { kind: 'i64', value: pixels(args[0]!.desc.shape) },
      { kind: 'i64', value: h! * w! },
      { kind: 'f64', value: p.scale },
      { kind: 'f64', value: p.mean[0] },
      { kind: 'f64', value: p.mean[1] },
      { kind: 'f64', value: p.mean[2] },
      { kind: 'f64', value: p.std[0] },
      { kind: 'f64', value: p.std[1] },
      { kind: 'f64', value: p.std[2] },
    ];
  },
};
