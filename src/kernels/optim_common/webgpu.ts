/**
 * The WGSL side of grad-transform.ts (f32 only): the squared norm is read from its buffer by every
 * invocation; the skip tests the exponent bits, since WGSL lets implementations assume no inf/NaN in
 * comparisons.
 */
import type { UniformWord } from '../../devices/webgpu/kernel-api.js';
import type { GradTransformScalars } from './grad-transform.js';

/** Uniform fields the helper reads (after the op's own fields). */
export const GRAD_CLIP_FIELDS = 'grad_scale: f32, max_norm: f32, skip: u32';

/** grad_clip(nrm): -1 when the step is skipped, else the clip factor (1 without clipping). */
export const GRAD_CLIP_WGSL = `
fn is_finite_bits(x: f32) -> bool { return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u; }
fn grad_clip(nrm: f32) -> f32 {
  if (P.skip != 0u && !is_finite_bits(nrm)) { return -1.0; }
  if (P.max_norm > 0.0) {
    let c = P.max_norm / (sqrt(nrm) * P.grad_scale + 1e-6);
    return select(c, 1.0, c > 1.0);
  }
  return 1.0;
}
`;

export function gradClipUniforms(t: GradTransformScalars): UniformWord[] {
  return [
    { type: 'f32', value: t.gradScale },
    { type: 'f32', value: t.maxNorm },
    { type: 'u32', value: t.skipNonFinite ? 1 : 0 },
  ];
}
