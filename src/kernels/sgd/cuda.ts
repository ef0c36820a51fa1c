/** sgd on CUDA: torch's _single_tensor_sgd element-wise in f32 (f64 for f64), the norm read on the device. */
import type { CudaArgDesc, CudaParam, CudaProgram } from '../../devices/cuda/kernel-api.js';
import type { Scalars } from '../../devices/device.js';
import { BLOCK_DIM, GRID_STRIDE, count, elementwiseGrid } from '../common/cuda.js';
import { GRAD_CLIP_CUDA, gradClipParams } from '../optim_common/cuda.js';
import { sgdParams } from './params.js';

const SOURCE = `${GRAD_CLIP_CUDA}
extern "C" __global__ void tdm_sgd(P_t* __restrict__ p, const G_t* __restrict__ g, P_t* __restrict__ buf,
    const N_t* __restrict__ norm, double lr, double momentum, double dampening, double weightDecay,
    int nesterov, int first, double gradScale, double maxNorm, int skip, long long n) {
  double clipD;
  if (!tdm_grad_clip((double)ldN(norm, 0), gradScale, maxNorm, skip, &clipD)) return;
  const P_c scale = (P_c)gradScale, clip = (P_c)clipD;
  const P_c negLr = (P_c)(-lr), wd = (P_c)weightDecay, mu = (P_c)momentum, keep = (P_c)(1.0 - dampening);
  ${GRID_STRIDE} {
    P_c d = (P_c)ldG(g, i) * scale * clip;
    const P_c pi = ldP(p, i);
    if (weightDecay != 0.0) d = d + wd * pi;
    if (momentum != 0.0) {
      const P_c b = first ? d : ldP(buf, i) * mu + keep * d;
      stP(buf, i, b);
      // torch keeps buf in the parameter's dtype: nesterov reads the stored (rounded) buffer.
      d = nesterov ? d + mu * ldP(buf, i) : ldP(buf, i);
    }
    stP(p, i, pi + negLr * d);
  }
}
`;

export const sgdCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_sgd',
  source: SOURCE,
  dtypes: (args: readonly CudaArgDesc[]) => ({
    P: args[0]!.desc.dtype,
    G: args[1]!.desc.dtype,
    N: args[3]!.desc.dtype,
  }),
  grid: (args) => elementwiseGrid(count(args[0]!)),
  block: () => BLOCK_DIM,
  params(args: readonly CudaArgDesc[], scalars: Scalars): CudaParam[] {
    const s = sgdParams('sgd', scalars);
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      { kind: 'ptr', arg: 2 },
      { kind: 'ptr', arg: 3 },
      { kind: 'f64', value: s.lr },
      { kind: 'f64', value: s.momentum },
      { kind: 'f64', value: s.dampening },
      { kind: 'f64', value: s.weightDecay },
      { kind: 'i32', value: s.nesterov ? 1 : 0 },
      { kind: 'i32', value: s.first ? 1 : 0 },
      ...gradClipParams(s),
      { kind: 'i64', value: count(args[0]!) },
    ];
  },
};
