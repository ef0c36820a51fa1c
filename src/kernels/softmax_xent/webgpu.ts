/**
 * WGSL softmax_xent (f32): one workgroup of 256 per row. Sweep 1 keeps an online (max, Σexp) pair per
 * invocation, merged by a tree in workgroup memory; invocation 0 writes the loss, and a barrier orders
 * that read of the target's logit before sweep 2 overwrites the row with the gradient. WGSL need not
 * support infinities, so the empty max is the finite −3e38 and NaN arrives as a uniform.
 */
import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
import { xentParams } from './def.js';

export const SOFTMAX_XENT_WGSL = `struct P { rows: u32, vp: u32, v: u32, backward: u32, grad_scale: f32, nan: f32 }
@group(0) @binding(0) var<storage, read_write> X: array<f32>;
@group(0) @binding(1) var<storage, read> T: array<i32>;
@group(0) @binding(2) var<storage, read_write> L: array<f32>;
@group(0) @binding(3) var<uniform> p: P;
var<workgroup> wm: array<f32, 256>;
var<workgroup> ws: array<f32, 256>;
const LOW: f32 = -3.0e38;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = wid.y * nwg.x + wid.x;
  // Every invocation reaches the barriers: out-of-range workgroups only skip memory accesses.
  let live = row < p.rows;
  let base = row * p.vp;
  var m = LOW;
  var s = 0.0;
  if (live) {
    for (var j = lid; j < p.v; j = j + 256u) {
      let x = X[base + j];
      let mm = max(m, x);
      s = s * exp(m - mm) + exp(x - mm);
      m = mm;
    }
  }
  wm[lid] = m;
  ws[lid] = s;
  workgroupBarrier();
  for (var k = 128u; k > 0u; k = k >> 1u) {
    if (lid < k) {
      let m1 = wm[lid];
      let m2 = wm[lid + k];
      let mm = max(m1, m2);
      ws[lid] = ws[lid] * exp(m1 - mm) + ws[lid + k] * exp(m2 - mm);
      wm[lid] = mm;
    }
    workgroupBarrier();
  }
  // (m − x_t) + log Σ rather than (m + log Σ) − x_t: no rounding of a large m + log Σ (see cuda.ts).
  let rowmax = wm[0];
  let logsum = log(ws[0]);
  var t = -1;
  if (live) { t = T[row]; }
  let valid = t >= 0 && t < i32(p.v);
  if (live && lid == 0u) {
    var loss = 0.0;
    if (valid) { loss = (rowmax - X[base + u32(t)]) + logsum; } else if (t != -1) { loss = p.nan; }
    L[row] = loss;
  }
  workgroupBarrier();
  if (live && p.backward != 0u) {
    for (var j = lid; j < p.vp; j = j + 256u) {
      var g = 0.0;
      if (j < p.v && t != -1) {
        if (valid) {
          g = (exp((X[base + j] - rowmax) - logsum) - select(0.0, 1.0, i32(j) == t)) * p.grad_scale;
        } else {
          g = p.nan;
        }
      }
      X[base + j] = g;
    }
  }
}
`;

export const softmaxXentWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args) => args.length === 3 && args[0]!.dtype === 'f32',
  plan(args, scalars) {
    const x = xentParams(args[0]!, scalars);
    return [
      {
        kind: 'dispatch',
        wgsl: SOFTMAX_XENT_WGSL,
        entry: 'main',
        bind: [0, 1, 2],
        uniforms: [
          { type: 'u32', value: x.rows },
          { type: 'u32', value: x.padded },
          { type: 'u32', value: x.vocab },
          { type: 'u32', value: x.backward ? 1 : 0 },
          { type: 'f32', value: x.gradScale },
          { type: 'f32', value: NaN },
        ],
        workgroups: { linear: x.rows },
      },
    ];
  },
};
