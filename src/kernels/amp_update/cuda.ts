/**
 * amp_update on CUDA: one thread runs params.ts's ampStep in double (f32 roundings as float casts), so
 * the step that follows reads its scale, skip decision and AdamW values without a host round trip.
 */
import type { CudaProgram } from '../../devices/cuda/kernel-api.js';
import { MATH_OVERLOADS } from '../common/cuda.js';
import { ampParams } from './params.js';

const SOURCE = `${MATH_OVERLOADS}
extern "C" __global__ void tdm_amp_update(const N_t* __restrict__ norm, double* __restrict__ scale,
    double* __restrict__ state, double* __restrict__ hyper, const double* __restrict__ lrIn, double beta1,
    double beta2, double growth, double backoff, double interval) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  const double nrm = (double)ldN(norm, 0);
  const double s = scale[0];
  if ((nrm - nrm) != 0.0) {  // inf or NaN: x - x is 0 only for a finite x
    scale[0] = (double)(float)(s * backoff);
    state[0] = 0.0;
    return;
  }
  const double lr = lrIn[0];
  const double t = state[1] + 1.0;
  state[1] = t;
  hyper[0] = lr;
  hyper[1] = lr / (1.0 - pow(beta1, t));
  hyper[2] = pow(1.0 - pow(beta2, t), 0.5);
  hyper[3] = (double)(float)(1.0 / s);
  const double successful = state[0] + 1.0;
  if (successful != interval) {
    state[0] = successful;
    return;
  }
  const float grown = (float)(s * growth);
  if (grown - grown == 0.0f) scale[0] = (double)grown;
  state[0] = 0.0;
}
`;

export const ampUpdateCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_amp_update',
  source: SOURCE,
  dtypes: (args) => ({ N: args[0]!.desc.dtype }),
  grid: () => [1, 1, 1],
  block: () => [32, 1, 1],
  params(_args, scalars) {
    const p = ampParams('amp_update', scalars);
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      { kind: 'ptr', arg: 2 },
      { kind: 'ptr', arg: 3 },
      { kind: 'ptr', arg: 4 },
      { kind: 'f64', value: p.beta1 },
      { kind: 'f64', value: p.beta2 },
      { kind: 'f64', value: p.growthFactor },
      { kind: 'f64', value: p.backoffFactor },
      { kind: 'f64', value: p.growthInterval },
    ];
  },
};
