/**
 * onnx_conv on CUDA for dense convs with few output channels (group 1, O ≤ 32, a window larger than
 * 1x1): PaddleOCR's FPN head (96 → 24 channels, 3x3 at 160x160: 17 GFLOP of the detector's 74 at
 * batch 16) and its stem (3 → 16, 3x3 stride 2). As im2col + GEMM these write and read a column
 * matrix 9x the input's size, and cuBLAS tiles waste most of a 24-row product. Here a block computes a
 * 16x16 tile of output pixels of one image for all O channels at once: input channels go through
 * shared memory CK at a time (the tile's input window and the weights [c][r][q][o]), each thread
 * keeps O sums in registers, and the bias, activation and epilogue are applied before the one store.
 */
import type { CudaProgram } from '../../devices/cuda/kernel-api.js';
import { MATH_OVERLOADS } from '../common/cuda.js';
import {
  EPILOGUE_PARAMS,
  GEOMETRY_PARAMS,
  STORE_ACTIVATED,
  descsOf,
  epilogueDefines,
  epilogueParamList,
  geometryParams,
} from './conv-cuda-common.js';
import { type ConvGeometry, convGeometry } from './conv.js';
import { UNARY_CUDA_HELPERS } from './elementwise-ops.js';

const TILE = 16;
/** Largest O the kernel keeps in registers. */
const MAX_O = 32;
/** Static shared memory the kernel may use (of 48 KiB). */
const SHARED_LIMIT = 40 << 10;

/** Input channels per shared-memory round and the input window a tile reads. */
function tiling(g: ConvGeometry, dtype: string) {
  const ck = Math.min(dtype === 'f64' ? 4 : 8, g.c);
  const tih = (TILE - 1) * g.sh + (g.kh - 1) * g.dh + 1;
  const tiw = (TILE - 1) * g.sw + (g.kw - 1) * g.dw + 1;
  const size = dtype === 'f64' ? 8 : 4;
  const bytes = ck * (tih * tiw + g.kh * g.kw * g.o) * size;
  return { ck, tih, tiw, bytes };
}

/** Whether the tiled kernel takes this conv (else im2col + GEMM or the direct kernel). */
export function tiledConvFits(g: ConvGeometry, dtype: string): boolean {
  return (
    g.group === 1 &&
    g.o <= MAX_O &&
    g.kh * g.kw > 1 &&
    g.c * g.kh * g.kw >= 16 &&
    tiling(g, dtype).bytes <= SHARED_LIMIT &&
    g.n <= 65535
  );
}

export const tiledConv: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_conv_tiled',
  source: `${MATH_OVERLOADS}${UNARY_CUDA_HELPERS}
extern "C" __global__ void __launch_bounds__(${TILE * TILE}) tdm_onnx_conv_tiled(const X_t* __restrict__ x,
    const X_t* __restrict__ w, const X_t* __restrict__ b, X_t* __restrict__ y, ${GEOMETRY_PARAMS},
    ${EPILOGUE_PARAMS}) {
  __shared__ X_c xs[CK][TIH][TIW];
  __shared__ X_c ws[CK][FKH][FKW][OC];
  // Blocks: x the tiles of one image (row-major over the tile grid), y the image.
  const int tiles_w = ((int)WO + ${TILE - 1}) / ${TILE};
  const int bx = blockIdx.x % tiles_w, by = blockIdx.x / tiles_w;
  const int tx = threadIdx.x % ${TILE}, ty = threadIdx.x / ${TILE};
  const int ow = bx * ${TILE} + tx, oh = by * ${TILE} + ty;
  const long long img = blockIdx.y;
  const int ih0 = by * ${TILE} * FSH - (int)PT, iw0 = bx * ${TILE} * FSW - (int)PL;
  const int c_ = (int)C, h_ = (int)H, w_ = (int)W;
  X_c acc[OC];
#pragma unroll
  for (int o = 0; o < OC; ++o) acc[o] = (X_c)0;
  for (int c0 = 0; c0 < c_; c0 += CK) {
    for (int e = threadIdx.x; e < CK * TIH * TIW; e += ${TILE * TILE}) {
      const int c = e / (TIH * TIW), rem = e - c * (TIH * TIW), r = rem / TIW, q = rem - r * TIW;
      const int ih = ih0 + r, iw = iw0 + q;
      X_c v = (X_c)0;
      if (c0 + c < c_ && ih >= 0 && ih < h_ && iw >= 0 && iw < w_)
        v = ldX(x, ((img * C + c0 + c) * H + ih) * W + iw);
      xs[c][r][q] = v;
    }
    for (int e = threadIdx.x; e < CK * FKH * FKW * OC; e += ${TILE * TILE}) {
      const int o = e % OC, t = e / OC, q = t % FKW, r = (t / FKW) % FKH, c = t / (FKW * FKH);
      X_c v = (X_c)0;
      if (c0 + c < c_) v = ldX(w, (((long long)o * C + c0 + c) * FKH + r) * FKW + q);
      ws[c][r][q][o] = v;
    }
    __syncthreads();
#pragma unroll
    for (int c = 0; c < CK; ++c)
#pragma unroll
      for (int r = 0; r < FKH; ++r)
#pragma unroll
        for (int q = 0; q < FKW; ++q) {
          const X_c v = xs[c][ty * FSH + r * FDH][tx * FSW + q * FDW];
#pragma unroll
          for (int o = 0; o < OC; ++o) acc[o] += v * ws[c][r][q][o];
        }
    __syncthreads();
  }
  if (oh < (int)HO && ow < (int)WO) {
#pragma unroll
    for (int o = 0; o < OC; ++o) {
      const long long i = ((img * O + o) * HO + oh) * WO + ow;
      const X_c s = acc[o] + ldX(b, o);
      ${STORE_ACTIVATED}
    }
  }
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  defines: (args, scalars) => {
    const g = convGeometry('onnx_conv', descsOf(args), scalars);
    const t = tiling(g, args[0]!.desc.dtype);
    return {
      ...epilogueDefines('onnx_conv', scalars),
      OC: g.o,
      CK: t.ck,
      TIH: t.tih,
      TIW: t.tiw,
      FKH: g.kh,
      FKW: g.kw,
      FSH: g.sh,
      FSW: g.sw,
      FDH: g.dh,
      FDW: g.dw,
    };
  },
  grid: (args, scalars) => {
    const g = convGeometry('onnx_conv', descsOf(args), scalars);
    return [Math.ceil(g.wo / TILE) * Math.ceil(g.ho / TILE), g.n, 1];
  },
  block: () => [TILE * TILE, 1, 1],
  params: (args, scalars) => {
    const g = convGeometry('onnx_conv', descsOf(args), scalars);
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      { kind: 'ptr', arg: 2 },
      { kind: 'ptr', arg: 3 },
      ...geometryParams(g),
      ...epilogueParamList('onnx_conv', scalars),
    ];
  },
};
