/**
 * onnx_conv and onnx_conv_transpose on WebGPU (f32): one invocation per output element, a direct loop
 * over the group's input channels and the kernel taps (groups, depthwise, dilations, asymmetric pads,
 * strides), the bias first, then the activation + epilogue program (webgpu-map.ts) before the store,
 * as the float64 reference does. The geometry travels as uniforms, so one pipeline serves every layer
 * whose epilogue has the same shape. Other dtypes are declined (the queue reports TANDEM_ERR_DTYPE).
 */
import type { Scalars, TensorDesc } from '../../devices/device.js';
import type { UniformWord, WebGpuKernel, WebGpuStep } from '../../devices/webgpu/kernel-api.js';
import { LINEAR_MAIN } from '../common/webgpu.js';
import { type ConvGeometry, convEpilogue, convGeometry, convTransposeGeometry } from './conv.js';
import type { MapProgram } from './map-program.js';
import { MAP_PARAM_FIELDS, mapParamWords, mapWgsl, mapWgslSupported } from './webgpu-map.js';

const GEOMETRY = [
  'n',
  'C',
  'H',
  'W',
  'O',
  'CG',
  'OG',
  'HO',
  'WO',
  'KH',
  'KW',
  'SH',
  'SW',
  'DH',
  'DW',
  'PT',
  'PL',
];

function descs(args: readonly TensorDesc[]) {
  return { x: args[0]!, w: args[1]!, b: args[2]!, y: args[3]! };
}

/** Output coordinates of invocation i and the accumulation that the two ops do differently. */
const CONV_BODY = `
  for (var ci = 0u; ci < P.CG; ci++) {
    let xb = ((nb * P.C + g * P.CG + ci) * P.H) * P.W;
    let wb = ((o * P.CG + ci) * P.KH) * P.KW;
    for (var r = 0u; r < P.KH; r++) {
      let ih = h0 + i32(r * P.DH);
      if (ih < 0 || ih >= i32(P.H)) { continue; }
      for (var q = 0u; q < P.KW; q++) {
        let iw = w0 + i32(q * P.DW);
        if (iw < 0 || iw >= i32(P.W)) { continue; }
        acc += X[xb + u32(ih) * P.W + u32(iw)] * Wt[wb + r * P.KW + q];
      }
    }
  }`;

/** ConvTranspose as a gather: tap (r, q) reads x where oh + PT − r·DH is a multiple of SH inside x. */
const TRANSPOSE_BODY = `
  for (var ci = 0u; ci < P.CG; ci++) {
    let c = g * P.CG + ci;
    let xb = ((nb * P.C + c) * P.H) * P.W;
    let wb = ((c * P.OG + (o - g * P.OG)) * P.KH) * P.KW;
    for (var r = 0u; r < P.KH; r++) {
      let th = i32(oh + P.PT) - i32(r * P.DH);
      if (th < 0 || u32(th) % P.SH != 0u || u32(th) / P.SH >= P.H) { continue; }
      for (var q = 0u; q < P.KW; q++) {
        let tw = i32(ow + P.PL) - i32(q * P.DW);
        if (tw < 0 || u32(tw) % P.SW != 0u || u32(tw) / P.SW >= P.W) { continue; }
        acc += X[xb + (u32(th) / P.SH) * P.W + u32(tw) / P.SW] * Wt[wb + r * P.KW + q];
      }
    }
  }`;

function convWgsl(p: MapProgram, body: string): string {
  const fields = [...GEOMETRY.map((f) => `${f}: u32`), ...MAP_PARAM_FIELDS];
  return `struct Params { ${fields.join(', ')} }
@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read> Wt: array<f32>;
@group(0) @binding(2) var<storage, read> B: array<f32>;
@group(0) @binding(3) var<storage, read_write> Y: array<f32>;
@group(0) @binding(4) var<uniform> P: Params;
${mapWgsl(p)}${LINEAR_MAIN}
  if (i >= P.n) { return; }
  let ow = i % P.WO;
  let oh = (i / P.WO) % P.HO;
  let o = (i / (P.WO * P.HO)) % P.O;
  let nb = i / (P.WO * P.HO * P.O);
  let g = o / P.OG;
  let h0 = i32(oh * P.SH) - i32(P.PT);
  let w0 = i32(ow * P.SW) - i32(P.PL);
  var acc = B[o];${body}
  Y[i] = prog(acc);
}
`;
}

function convStep(g: ConvGeometry, p: MapProgram, body: string): WebGpuStep {
  const n = g.n * g.o * g.ho * g.wo;
  const geometry = [n, g.c, g.h, g.w, g.o, g.cg, g.og, g.ho, g.wo, g.kh, g.kw, g.sh, g.sw, g.dh, g.dw];
  const words: UniformWord[] = [...geometry, g.pads[0], g.pads[1]].map((value) => ({ type: 'u32', value }));
  return {
    kind: 'dispatch',
    wgsl: convWgsl(p, body),
    entry: 'main',
    bind: [0, 1, 2, 3],
    uniforms: [...words, ...mapParamWords(p)],
    workgroups: { linear: Math.ceil(n / 256) },
  };
}

function supported(op: string, args: readonly TensorDesc[], scalars: Scalars): boolean {
  return (
    args.length === 4 && args.every((a) => a.dtype === 'f32') && mapWgslSupported(convEpilogue(op, scalars))
  );
}

export const onnxConvWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args, scalars) => supported('onnx_conv', args, scalars),
  plan: (args, scalars) => [
    convStep(convGeometry('onnx_conv', descs(args), scalars), convEpilogue('onnx_conv', scalars), CONV_BODY),
  ],
};

export const onnxConvTransposeWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args, scalars) => supported('onnx_conv_transpose', args, scalars),
  plan: (args, scalars) => [
    convStep(
      convTransposeGeometry('onnx_conv_transpose', descs(args), scalars),
      convEpilogue('onnx_conv_transpose', scalars),
      TRANSPOSE_BODY,
    ),
  ],
};
