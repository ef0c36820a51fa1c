/**
 * conv2d on WebGPU, f32: a direct kernel, one invocation per output element summing over C·kh·kw (no
 * column buffer, so no scratch memory; the CNN's layers are small enough for this to be the simple,
 * correct first version). The backward kernels (conv2d_backward/webgpu.ts) share the uniform block.
 */
import type { TensorDesc } from '../../devices/device.js';
import type { UniformWord, WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
import { LINEAR_MAIN } from '../common/webgpu.js';
import type { ConvGeometry } from './geometry.js';
import { convGeometry } from './geometry.js';

/** Sizes as i32 (window arithmetic goes below zero), then the dispatch's element count and the accumulate flag. */
export const CONV_PARAMS_WGSL =
  'struct Params { n: i32, c: i32, h: i32, w: i32, o: i32, kh: i32, kw: i32, s: i32, pad: i32, ho: i32, wo: i32, total: u32, acc: u32 }';

export function convUniforms(g: ConvGeometry, total: number, accumulate = false): UniformWord[] {
  const sizes = [g.n, g.c, g.h, g.w, g.o, g.kh, g.kw, g.stride, g.padding, g.ho, g.wo];
  return [
    ...sizes.map((value): UniformWord => ({ type: 'i32', value })),
    { type: 'u32', value: total },
    { type: 'u32', value: accumulate ? 1 : 0 },
  ];
}

export function allF32(args: readonly TensorDesc[]): boolean {
  return args.every((a) => a.dtype === 'f32');
}

export const CONV2D_WGSL = `${CONV_PARAMS_WGSL}
@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read> Wt: array<f32>;
@group(0) @binding(2) var<storage, read> B: array<f32>;
@group(0) @binding(3) var<storage, read_write> Y: array<f32>;
@group(0) @binding(4) var<uniform> P: Params;
${LINEAR_MAIN}
  if (i >= P.total) { return; }
  let t = i32(i);
  let j = t % P.wo;
  let oi = (t / P.wo) % P.ho;
  let o = (t / (P.wo * P.ho)) % P.o;
  let n = t / (P.wo * P.ho * P.o);
  var acc = B[o];
  for (var c = 0; c < P.c; c = c + 1) {
    for (var ki = 0; ki < P.kh; ki = ki + 1) {
      let h = oi * P.s - P.pad + ki;
      if (h < 0 || h >= P.h) { continue; }
      for (var kj = 0; kj < P.kw; kj = kj + 1) {
        let x = j * P.s - P.pad + kj;
        if (x < 0 || x >= P.w) { continue; }
        acc = acc + X[((n * P.c + c) * P.h + h) * P.w + x] * Wt[((o * P.c + c) * P.kh + ki) * P.kw + kj];
      }
    }
  }
  Y[i] = acc;
}
`;

export const conv2dWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args) => args.length === 4 && allF32(args),
  plan(args, scalars) {
    const g = convGeometry(args[0]!.shape, args[1]!.shape, scalars);
    const total = g.n * g.o * g.ho * g.wo;
    return [
      {
        kind: 'dispatch',
        wgsl: CONV2D_WGSL,
        entry: 'main',
        bind: [0, 1, 2, 3],
        uniforms: convUniforms(g, total),
        workgroups: { linear: Math.ceil(total / 256) },
      },
    ];
  },
};
