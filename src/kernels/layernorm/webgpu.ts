/**
 * WGSL layernorm (f32): one workgroup of 256 per row; sum, then the sum of squared deviations (two-pass
 * variance, like the reference), each reduced by a tree in workgroup memory; then y, mean and rstd.
 */
import { numel } from '../../core/shape.js';
import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
import { epsScalar } from '../common/norm-checks.js';

export const LAYERNORM_WGSL = `struct P { rows: u32, c: u32, eps: f32 }
@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read> W: array<f32>;
@group(0) @binding(2) var<storage, read> B: array<f32>;
@group(0) @binding(3) var<storage, read_write> Y: array<f32>;
@group(0) @binding(4) var<storage, read_write> MEAN: array<f32>;
@group(0) @binding(5) var<storage, read_write> RSTD: array<f32>;
@group(0) @binding(6) var<uniform> p: P;
var<workgroup> part_mean: array<f32, 256>;
var<workgroup> part_var: array<f32, 256>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = wid.y * nwg.x + wid.x;
  let live = row < p.rows;
  let base = row * p.c;
  var s = 0.0;
  if (live) { for (var j = lid; j < p.c; j = j + 256u) { s = s + X[base + j]; } }
  part_mean[lid] = s;
  workgroupBarrier();
  for (var k = 128u; k > 0u; k = k >> 1u) {
    if (lid < k) { part_mean[lid] = part_mean[lid] + part_mean[lid + k]; }
    workgroupBarrier();
  }
  let mu = part_mean[0] / f32(p.c);
  var q = 0.0;
  if (live) { for (var j = lid; j < p.c; j = j + 256u) { let d = X[base + j] - mu; q = q + d * d; } }
  part_var[lid] = q;
  workgroupBarrier();
  for (var k = 128u; k > 0u; k = k >> 1u) {
    if (lid < k) { part_var[lid] = part_var[lid] + part_var[lid + k]; }
    workgroupBarrier();
  }
  let rs = 1.0 / sqrt(part_var[0] / f32(p.c) + p.eps);
  if (live) {
    for (var j = lid; j < p.c; j = j + 256u) { Y[base + j] = (X[base + j] - mu) * rs * W[j] + B[j]; }
    if (lid == 0u) { MEAN[row] = mu; RSTD[row] = rs; }
  }
}
`;

export const layernormWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args) => args.length === 6 && args.every((a) => a.dtype === 'f32'),
  plan(args, scalars) {
    const x = args[0]!;
    const c = x.shape[x.shape.length - 1]!;
    const rows = numel(x.shape) / c;
    return [
      {
        kind: 'dispatch',
        wgsl: LAYERNORM_WGSL,
        entry: 'main',
        bind: [0, 1, 2, 3, 4, 5],
        uniforms: [
          { type: 'u32', value: rows },
          { type: 'u32', value: c },
          { type: 'f32', value: epsScalar('layernorm', scalars) },
        ],
        workgroups: { linear: rows },
      },
    ];
  },
};
