/** WGSL scale: x = alpha * x in place, one invocation per element (f16 storage converted to f32). */
import { numel } from '../../core/shape.js';
import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
import { numberScalar } from '../common/scalars.js';

export function scaleWgsl(t: 'f32' | 'f16'): string {
  return `${t === 'f16' ? 'enable f16;\n' : ''}struct Params { n: u32, alpha: f32 }
@group(0) @binding(0) var<storage, read_write> X: array<${t}>;
@group(0) @binding(1) var<uniform> P: Params;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (i >= P.n) { return; }
  X[i] = ${t}(P.alpha * f32(X[i]));
}
`;
}

export const scaleWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args, _s, f) =>
    args.length === 1 && (args[0]!.dtype === 'f32' || (args[0]!.dtype === 'f16' && f.shaderF16)),
  plan(args, scalars) {
    const n = numel(args[0]!.shape);
    return [
      {
        kind: 'dispatch',
        wgsl: scaleWgsl(args[0]!.dtype === 'f16' ? 'f16' : 'f32'),
        entry: 'main',
        bind: [0],
        uniforms: [
          { type: 'u32', value: n },
          { type: 'f32', value: numberScalar('scale', scalars, 'alpha') },
        ],
        workgroups: { linear: Math.ceil(n / 256) },
      },
    ];
  },
};
