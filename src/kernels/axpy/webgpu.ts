/** WGSL axpy: y = alpha * x + y, one invocation per element, f32 arithmetic (f16 storage converted). */
import { numel } from '../../core/shape.js';
import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
import { numberScalar } from '../common/scalars.js';

export function axpyWgsl(t: 'f32' | 'f16'): string {
  return `${t === 'f16' ? 'enable f16;\n' : ''}struct Params { n: u32, alpha: f32 }
@group(0) @binding(0) var<storage, read> X: array<${t}>;
@group(0) @binding(1) var<storage, read_write> Y: array<${t}>;
@group(0) @binding(2) var<uniform> P: Params;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (i >= P.n) { return; }
  Y[i] = ${t}(fma(P.alpha, f32(X[i]), f32(Y[i])));
}
`;
}

export const axpyWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args, _s, f) =>
    args.length === 2 &&
    args[0]!.dtype === args[1]!.dtype &&
    (args[0]!.dtype === 'f32' || (args[0]!.dtype === 'f16' && f.shaderF16)),
  plan(args, scalars) {
    const n = numel(args[0]!.shape);
    return [
      {
        kind: 'dispatch',
        wgsl: axpyWgsl(args[0]!.dtype === 'f16' ? 'f16' : 'f32'),
        entry: 'main',
        bind: [0, 1],
        uniforms: [
          { type: 'u32', value: n },
          { type: 'f32', value: numberScalar('axpy', scalars, 'alpha', 1) },
        ],
        workgroups: { linear: Math.ceil(n / 256) },
      },
    ];
  },
};
