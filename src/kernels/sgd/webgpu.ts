/** WGSL sgd, f32 tensors only: torch's _single_tensor_sgd per element, the norm read on the device. */
import { numel } from '../../core/shape.js';
import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
import { LINEAR_MAIN } from '../common/webgpu.js';
import { GRAD_CLIP_FIELDS, GRAD_CLIP_WGSL, gradClipUniforms } from '../optim_common/webgpu.js';
import { sgdParams } from './params.js';

export const SGD_WGSL = `struct Params { n: u32, neg_lr: f32, momentum: f32, keep: f32, weight_decay: f32,
  nesterov: u32, first: u32, ${GRAD_CLIP_FIELDS} }
@group(0) @binding(0) var<storage, read_write> W: array<f32>;
@group(0) @binding(1) var<storage, read> G: array<f32>;
@group(0) @binding(2) var<storage, read_write> BUF: array<f32>;
@group(0) @binding(3) var<storage, read> NORM: array<f32>;
@group(0) @binding(4) var<uniform> P: Params;
${GRAD_CLIP_WGSL}
${LINEAR_MAIN}
  if (i >= P.n) { return; }
  let clip = grad_clip(NORM[0]);
  if (clip < 0.0) { return; }
  let w = W[i];
  var d = G[i] * P.grad_scale * clip;
  if (P.weight_decay != 0.0) { d = d + P.weight_decay * w; }
  if (P.momentum != 0.0) {
    var b: f32;
    if (P.first != 0u) { b = d; } else { b = BUF[i] * P.momentum + P.keep * d; }
    BUF[i] = b;
    if (P.nesterov != 0u) { d = d + P.momentum * b; } else { d = b; }
  }
  W[i] = w + P.neg_lr * d;
}
`;

export const sgdWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args) => args.length === 4 && args.every((a) => a.dtype === 'f32'),
  plan(args, scalars) {
    const s = sgdParams('sgd', scalars);
    const n = numel(args[0]!.shape);
    return [
      {
        kind: 'dispatch',
        wgsl: SGD_WGSL,
        entry: 'main',
        bind: [0, 1, 2, 3],
        uniforms: [
          { type: 'u32', value: n },
          { type: 'f32', value: -s.lr },
          { type: 'f32', value: s.momentum },
          { type: 'f32', value: 1 - s.dampening },
          { type: 'f32', value: s.weightDecay },
          { type: 'u32', value: s.nesterov ? 1 : 0 },
          { type: 'u32', value: s.first ? 1 : 0 },
          ...gradClipUniforms(s),
        ],
        workgroups: { linear: Math.ceil(n / 256) },
      },
    ];
  },
};
