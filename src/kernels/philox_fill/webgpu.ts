import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
import { PHILOX_WGSL } from '../mc_common/sources.js';
import { readPhiloxScalars } from './def.js';

export const PHILOX_FILL_WGSL = `${PHILOX_WGSL}
struct P { n: u32, first: u32, block: u32, k0: u32, k1: u32 }
@group(0) @binding(0) var<storage, read_write> OUT: array<vec4<u32>>;
@group(0) @binding(1) var<uniform> p: P;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (i >= p.n) { return; }
  OUT[i] = tdm_philox(vec4<u32>(p.first + i, p.block, 0u, 0u), vec2<u32>(p.k0, p.k1));
}
`;

export const philoxFillWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args) => args.length === 1 && args[0]!.dtype === 'i32',
  plan(args, scalars) {
    const s = readPhiloxScalars(scalars);
    const n = args[0]!.shape[0]!;
    return [
      {
        kind: 'dispatch',
        wgsl: PHILOX_FILL_WGSL,
        entry: 'main',
        bind: [0],
        uniforms: [
          { type: 'u32', value: n },
          { type: 'u32', value: s.first },
          { type: 'u32', value: s.block },
          { type: 'u32', value: s.k0 },
          { type: 'u32', value: s.k1 },
        ],
        workgroups: { linear: Math.ceil(n / 256) },
      },
    ];
  },
};
