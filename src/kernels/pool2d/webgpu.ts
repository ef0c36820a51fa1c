/**
 * pool2d and pool2d_backward on WebGPU, f32, direct kernels like the CUDA ones: one invocation per
 * output element (forward) or per element of dx (backward, gathering from the windows that hold it;
 * max recomputes each window's first maximum, so the same element receives the gradient).
 */
import type { TensorDesc } from '../../devices/device.js';
import type { UniformWord, WebGpuKernel, WebGpuStep } from '../../devices/webgpu/kernel-api.js';
import type { Scalars } from '../../devices/device.js';
import { LINEAR_MAIN } from '../common/webgpu.js';
import { type PoolOp, poolGeometry } from './geometry.js';

const PARAMS = 'struct Params { h: i32, w: i32, ho: i32, wo: i32, k: i32, s: i32, pad: i32, total: u32 }';

/** Plane-relative index of window (i, j)'s first maximum. */
const ARGMAX = `fn window_argmax(plane: i32, i: i32, j: i32) -> i32 {
  let h0 = i * P.s - P.pad;
  let w0 = j * P.s - P.pad;
  var best = -1;
  var bv = 0.0;
  for (var h = max(h0, 0); h < min(h0 + P.k, P.h); h = h + 1) {
    for (var w = max(w0, 0); w < min(w0 + P.k, P.w); w = w + 1) {
      let v = X[plane + h * P.w + w];
      if (best < 0 || v > bv) { best = h * P.w + w; bv = v; }
    }
  }
  return best;
}`;

const SUM = `fn window_sum(plane: i32, i: i32, j: i32) -> f32 {
  let h0 = i * P.s - P.pad;
  let w0 = j * P.s - P.pad;
  var sum = 0.0;
  for (var h = max(h0, 0); h < min(h0 + P.k, P.h); h = h + 1) {
    for (var w = max(w0, 0); w < min(w0 + P.k, P.w); w = w + 1) { sum = sum + X[plane + h * P.w + w]; }
  }
  return sum;
}`;

export function poolWgsl(op: PoolOp): string {
  const value =
    op === 'max' ? 'X[plane + window_argmax(plane, oi, j)]' : 'window_sum(plane, oi, j) / f32(P.k * P.k)';
  return `${PARAMS}
@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read_write> Y: array<f32>;
@group(0) @binding(2) var<uniform> P: Params;
${op === 'max' ? ARGMAX : SUM}
${LINEAR_MAIN}
  if (i >= P.total) { return; }
  let t = i32(i);
  let j = t % P.wo;
  let oi = (t / P.wo) % P.ho;
  let plane = (t / (P.wo * P.ho)) * P.h * P.w;
  Y[i] = ${value};
}
`;
}

/** max binds x, dy, dx; avg never reads x, so it binds dy, dx only (pipelines use the 'auto' layout). */
export function poolBackwardWgsl(op: PoolOp): string {
  const bindings =
    op === 'max'
      ? `@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read> DY: array<f32>;
@group(0) @binding(2) var<storage, read_write> DX: array<f32>;
@group(0) @binding(3) var<uniform> P: Params;
${ARGMAX}`
      : `@group(0) @binding(0) var<storage, read> DY: array<f32>;
@group(0) @binding(1) var<storage, read_write> DX: array<f32>;
@group(0) @binding(2) var<uniform> P: Params;`;
  const add =
    op === 'max'
      ? 'if (window_argmax(plane, wi, wj) == h * P.w + x) { acc = acc + d; }'
      : 'acc = acc + d / f32(P.k * P.k);';
  return `${PARAMS}
${bindings}
${LINEAR_MAIN}
  if (i >= P.total) { return; }
  let t = i32(i);
  let x = t % P.w;
  let h = (t / P.w) % P.h;
  let nc = t / (P.w * P.h);
  let plane = nc * P.h * P.w;
  // Windows (wi, wj) with wi·s − pad ≤ h < wi·s − pad + k (and wj alike).
  let ilo = max(0, (h + P.pad - P.k + P.s) / P.s);
  let ihi = min(P.ho - 1, (h + P.pad) / P.s);
  let jlo = max(0, (x + P.pad - P.k + P.s) / P.s);
  let jhi = min(P.wo - 1, (x + P.pad) / P.s);
  var acc = 0.0;
  for (var wi = ilo; wi <= ihi; wi = wi + 1) {
    for (var wj = jlo; wj <= jhi; wj = wj + 1) {
      let d = DY[(nc * P.ho + wi) * P.wo + wj];
      ${add}
    }
  }
  DX[t] = acc;
}
`;
}

function uniforms(x: TensorDesc, scalars: Scalars, name: string, total: number): UniformWord[] {
  const g = poolGeometry(x.shape, scalars, name);
  return [
    ...[g.h, g.w, g.ho, g.wo, g.kernel, g.stride, g.padding].map((value): UniformWord => ({
      type: 'i32',
      value,
    })),
    { type: 'u32', value: total },
  ];
}

function step(wgsl: string, bind: number[], u: UniformWord[], total: number): WebGpuStep {
  return {
    kind: 'dispatch',
    wgsl,
    entry: 'main',
    bind,
    uniforms: u,
    workgroups: { linear: Math.ceil(total / 256) },
  };
}

const allF32 = (args: readonly TensorDesc[]): boolean => args.every((a) => a.dtype === 'f32');

export const pool2dWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args) => args.length === 2 && allF32(args),
  plan(args, scalars) {
    const g = poolGeometry(args[0]!.shape, scalars);
    const total = g.n * g.c * g.ho * g.wo;
    return [step(poolWgsl(g.op), [0, 1], uniforms(args[0]!, scalars, 'pool2d', total), total)];
  },
};

export const pool2dBackwardWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args) => args.length === 3 && allF32(args),
  plan(args, scalars) {
    const g = poolGeometry(args[0]!.shape, scalars, 'pool2d_backward');
    const total = g.n * g.c * g.h * g.w;
    const bind = g.op === 'max' ? [0, 1, 2] : [1, 2];
    return [step(poolBackwardWgsl(g.op), bind, uniforms(args[0]!, scalars, 'pool2d_backward', total), total)];
  },
};
