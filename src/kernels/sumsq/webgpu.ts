/**
 * WGSL sumsq, f32 only: one workgroup of 256 strides over x and combines in workgroup memory (WGSL has
 * no float atomics, and a launch has no scratch buffer for a two-pass sum); f32 accumulation.
 */
import { numel } from '../../core/shape.js';
import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';

export const SUMSQ_WGSL = `struct Params { n: u32 }
@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read_write> ACC: array<f32>;
@group(0) @binding(2) var<uniform> P: Params;
var<workgroup> part: array<f32, 256>;
@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32) {
  var s = 0.0;
  for (var i = lid; i < P.n; i = i + 256u) {
    let v = X[i];
    s = s + v * v;
  }
  part[lid] = s;
  workgroupBarrier();
  for (var k = 128u; k > 0u; k = k >> 1u) {
    if (lid < k) { part[lid] = part[lid] + part[lid + k]; }
    workgroupBarrier();
  }
  if (lid == 0u) { ACC[0] = ACC[0] + part[0]; }
}
`;

export const sumsqWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args) => args.length === 2 && args[0]!.dtype === 'f32' && args[1]!.dtype === 'f32',
  plan: (args) => [
    {
      kind: 'dispatch',
      wgsl: SUMSQ_WGSL,
      entry: 'main',
      bind: [0, 1],
      uniforms: [{ type: 'u32', value: numel(args[0]!.shape) }],
      workgroups: [1, 1, 1],
    },
  ],
};
