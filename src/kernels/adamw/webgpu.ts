/** WGSL adamw, f32 tensors only: torch's AdamW per element, the norm read on the device. */
import { numel } from '../../core/shape.js';
import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
import { LINEAR_MAIN } from '../common/webgpu.js';
import { GRAD_CLIP_FIELDS, GRAD_CLIP_WGSL, gradClipUniforms } from '../optim_common/webgpu.js';
import { adamwConstants, adamwParams } from './params.js';

export const ADAMW_WGSL = `struct Params { n: u32, decay: f32, lerp_w: f32, beta2: f32, one_minus_beta2: f32,
  neg_step: f32, bias2_sqrt: f32, eps: f32, ${GRAD_CLIP_FIELDS} }
@group(0) @binding(0) var<storage, read_write> W: array<f32>;
@group(0) @binding(1) var<storage, read> G: array<f32>;
@group(0) @binding(2) var<storage, read_write> M: array<f32>;
@group(0) @binding(3) var<storage, read_write> V: array<f32>;
@group(0) @binding(4) var<storage, read> NORM: array<f32>;
@group(0) @binding(5) var<uniform> P: Params;
${GRAD_CLIP_WGSL}
${LINEAR_MAIN}
  if (i >= P.n) { return; }
  let clip = grad_clip(NORM[0]);
  if (clip < 0.0) { return; }
  let g = G[i] * P.grad_scale * clip;
  let m = M[i];
  let diff = g - m;
  var m1: f32;
  if (P.lerp_w < 0.5) { m1 = m + P.lerp_w * diff; } else { m1 = g - diff * (1.0 - P.lerp_w); }
  let v1 = V[i] * P.beta2 + P.one_minus_beta2 * g * g;
  M[i] = m1;
  V[i] = v1;
  W[i] = W[i] * P.decay + P.neg_step * (m1 / (sqrt(v1) / P.bias2_sqrt + P.eps));
}
`;

export const adamwWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args) => args.length === 5 && args.every((a) => a.dtype === 'f32'),
  plan(args, scalars) {
    const s = adamwParams('adamw', scalars);
    const c = adamwConstants(s);
    const n = numel(args[0]!.shape);
    return [
      {
        kind: 'dispatch',
        wgsl: ADAMW_WGSL,
        entry: 'main',
        bind: [0, 1, 2, 3, 4],
        uniforms: [
          { type: 'u32', value: n },
          { type: 'f32', value: c.decay },
          { type: 'f32', value: c.lerpWeight },
          { type: 'f32', value: c.beta2 },
          { type: 'f32', value: c.oneMinusBeta2 },
          { type: 'f32', value: -c.stepSize },
          { type: 'f32', value: c.bias2Sqrt },
          { type: 'f32', value: c.eps },
          ...gradClipUniforms(s),
        ],
        workgroups: { linear: Math.ceil(n / 256) },
      },
    ];
  },
};
