/**
 * conv2d_backward on WebGPU, f32, three direct kernels:
 *   dx: one invocation per element of x, gathering dy·w over the taps whose output position exists;
 *   dw: one workgroup of 256 per weight, striding over N·Ho·Wo and combining in workgroup memory;
 *   db: one workgroup per output channel, the same way.
 * dw and db add to what they hold when `accumulate` (the uniform's acc flag).
 */
import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
import { boolScalar } from '../common/scalars.js';
import { LINEAR_MAIN } from '../common/webgpu.js';
import { convGeometry } from '../conv2d/geometry.js';
import { CONV_PARAMS_WGSL, allF32, convUniforms } from '../conv2d/webgpu.js';

const OP = 'conv2d_backward';

export const CONV2D_DX_WGSL = `${CONV_PARAMS_WGSL}
@group(0) @binding(0) var<storage, read> DY: array<f32>;
@group(0) @binding(1) var<storage, read> Wt: array<f32>;
@group(0) @binding(2) var<storage, read_write> DX: array<f32>;
@group(0) @binding(3) var<uniform> P: Params;
${LINEAR_MAIN}
  if (i >= P.total) { return; }
  let t = i32(i);
  let x = t % P.w;
  let h = (t / P.w) % P.h;
  let c = (t / (P.w * P.h)) % P.c;
  let n = t / (P.w * P.h * P.c);
  var acc = 0.0;
  for (var o = 0; o < P.o; o = o + 1) {
    for (var ki = 0; ki < P.kh; ki = ki + 1) {
      let hi = h + P.pad - ki;
      if (hi < 0 || hi % P.s != 0 || hi / P.s >= P.ho) { continue; }
      for (var kj = 0; kj < P.kw; kj = kj + 1) {
        let xj = x + P.pad - kj;
        if (xj < 0 || xj % P.s != 0 || xj / P.s >= P.wo) { continue; }
        acc = acc + DY[((n * P.o + o) * P.ho + hi / P.s) * P.wo + xj / P.s] * Wt[((o * P.c + c) * P.kh + ki) * P.kw + kj];
      }
    }
  }
  DX[i] = acc;
}
`;

/** Shared by dw and db: the workgroup's index, its reduction and the final store. */
function reduction(bindings: string, body: string, store: string): string {
  return `${CONV_PARAMS_WGSL}
${bindings}
var<workgroup> part: array<f32, 256>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let e = wid.y * nwg.x + wid.x;
  // Every invocation reaches the barriers, so workgroups past the end only skip the store.
  let live = e < P.total;
  let t = i32(e);
  let p = P.ho * P.wo;
  var acc = 0.0;
  if (live) {
${body}
  }
  part[lid] = acc;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s = s >> 1u) {
    if (lid < s) { part[lid] = part[lid] + part[lid + s]; }
    workgroupBarrier();
  }
  if (live && lid == 0u) {
    ${store}
  }
}
`;
}

export const CONV2D_DW_WGSL = reduction(
  `@group(0) @binding(0) var<storage, read> DY: array<f32>;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> DW: array<f32>;
@group(0) @binding(3) var<uniform> P: Params;`,
  `    let kj = t % P.kw;
    let ki = (t / P.kw) % P.kh;
    let c = (t / (P.kw * P.kh)) % P.c;
    let o = t / (P.kw * P.kh * P.c);
    for (var q = i32(lid); q < P.n * p; q = q + 256) {
      let n = q / p;
      let r = q - n * p;
      let h = (r / P.wo) * P.s - P.pad + ki;
      let x = (r % P.wo) * P.s - P.pad + kj;
      if (h >= 0 && h < P.h && x >= 0 && x < P.w) {
        acc = acc + DY[(n * P.o + o) * p + r] * X[((n * P.c + c) * P.h + h) * P.w + x];
      }
    }`,
  'DW[e] = select(0.0, DW[e], P.acc != 0u) + part[0];',
);

export const CONV2D_DB_WGSL = reduction(
  `@group(0) @binding(0) var<storage, read> DY: array<f32>;
@group(0) @binding(1) var<storage, read_write> DB: array<f32>;
@group(0) @binding(2) var<uniform> P: Params;`,
  `    for (var q = i32(lid); q < P.n * p; q = q + 256) {
      let n = q / p;
      acc = acc + DY[(n * P.o + t) * p + (q - n * p)];
    }`,
  'DB[e] = select(0.0, DB[e], P.acc != 0u) + part[0];',
);

export const conv2dBackwardWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args) => args.length === 6 && allF32(args),
  plan(args, scalars) {
    const g = convGeometry(args[1]!.shape, args[2]!.shape, scalars, OP);
    const accumulate = boolScalar(OP, scalars, 'accumulate', false);
    const xCount = g.n * g.c * g.h * g.w;
    const wCount = g.o * g.c * g.kh * g.kw;
    return [
      {
        kind: 'dispatch',
        wgsl: CONV2D_DX_WGSL,
        entry: 'main',
        bind: [0, 2, 3],
        uniforms: convUniforms(g, xCount),
        workgroups: { linear: Math.ceil(xCount / 256) },
      },
      {
        kind: 'dispatch',
        wgsl: CONV2D_DW_WGSL,
        entry: 'main',
        bind: [0, 1, 4],
        uniforms: convUniforms(g, wCount, accumulate),
        workgroups: { linear: wCount },
      },
      {
        kind: 'dispatch',
        wgsl: CONV2D_DB_WGSL,
        entry: 'main',
        bind: [0, 5],
        uniforms: convUniforms(g, g.o, accumulate),
        workgroups: { linear: g.o },
      },
    ];
  },
};
