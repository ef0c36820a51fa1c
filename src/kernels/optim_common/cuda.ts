/**
 * The CUDA side of grad-transform.ts: every optimizer program reads the squared global norm on the
 * device (no host round trip) and forms the same skip decision and clip factor as gradFactor().
 */
import type { CudaParam } from '../../devices/cuda/kernel-api.js';
import type { GradTransformScalars } from './grad-transform.js';

/**
 * tdm_grad_clip: false when the step is skipped (skip set and the norm is inf/NaN: x − x is exactly 0
 * for a finite x and NaN otherwise, in IEEE double arithmetic, which NVRTC keeps without fast math);
 * otherwise *clip = min(1, maxNorm/(√norm·gradScale + 1e-6)), NaN kept (torch.clamp keeps it), or 1
 * without clipping.
 */
export const GRAD_CLIP_CUDA = `
static __device__ __forceinline__ bool tdm_grad_clip(double nrm, double gradScale, double maxNorm, int skip, double* clip) {
  const bool finite = (nrm - nrm) == 0.0;
  if (skip != 0 && !finite) return false;
  *clip = 1.0;
  if (maxNorm > 0.0) {
    const double c = maxNorm / (sqrt(nrm) * gradScale + 1e-6);
    *clip = c > 1.0 ? 1.0 : c;
  }
  return true;
}
`;

/** The kernel parameters `double gradScale, double maxNorm, int skip` in that order. */
export function gradClipParams(t: GradTransformScalars): CudaParam[] {
  return [
    { kind: 'f64', value: t.gradScale },
    { kind: 'f64', value: t.maxNorm },
    { kind: 'i32', value: t.skipNonFinite ? 1 : 0 },
  ];
}
