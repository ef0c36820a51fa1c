/**
 * WGSL cast among f32, i32 and f16 (f16 with shader-f16). Float to i32 truncates toward zero and
 * saturates, NaN -> 0 (convert.ts): written out explicitly because WGSL's own conversion clamps to
 * the largest f32 below 2^31 and leaves NaN undefined. NaN is tested on the bits, which fast-math
 * compilers cannot fold away. Same dtype: a buffer copy.
 */
import { numel } from '../../core/shape.js';
import type { DType } from '../../core/dtype.js';
import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';

type WgslType = 'f32' | 'f16' | 'i32';

function wgslType(d: DType, f16: boolean): WgslType | undefined {
  return d === 'f32' || d === 'i32' || (d === 'f16' && f16) ? d : undefined;
}

const TO_I32 = `fn to_i32(x: f32) -> i32 {
  if ((bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u) { return 0; }
  if (x >= 2147483648.0) { return 2147483647; }
  if (x <= -2147483648.0) { return -2147483647 - 1; }
  return i32(x);
}
`;

export function castWgsl(from: WgslType, to: WgslType): string {
  const f16 = from === 'f16' || to === 'f16';
  const value = from === 'i32' ? `${to}(X[i])` : to === 'i32' ? 'to_i32(f32(X[i]))' : `${to}(f32(X[i]))`;
  return `${f16 ? 'enable f16;\n' : ''}struct Params { n: u32 }
@group(0) @binding(0) var<storage, read> X: array<${from}>;
@group(0) @binding(1) var<storage, read_write> Y: array<${to}>;
@group(0) @binding(2) var<uniform> P: Params;
${to === 'i32' && from !== 'i32' ? TO_I32 : ''}@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (i >= P.n) { return; }
  Y[i] = ${value};
}
`;
}

export const castWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args, _s, f) =>
    args.length === 2 &&
    (args[0]!.dtype === args[1]!.dtype ||
      (wgslType(args[0]!.dtype, f.shaderF16) !== undefined &&
        wgslType(args[1]!.dtype, f.shaderF16) !== undefined)),
  plan(args, _scalars, f) {
    const [x, y] = args as [(typeof args)[0], (typeof args)[0]];
    if (x.dtype === y.dtype) return [{ kind: 'copy', src: 0, dst: 1, bytes: x.bytes }];
    const n = numel(x.shape);
    return [
      {
        kind: 'dispatch',
        wgsl: castWgsl(wgslType(x.dtype, f.shaderF16)!, wgslType(y.dtype, f.shaderF16)!),
        entry: 'main',
        bind: [0, 1],
        uniforms: [{ type: 'u32', value: n }],
        workgroups: { linear: Math.ceil(n / 256) },
      },
    ];
  },
};
