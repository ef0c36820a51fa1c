import type { CudaProgram } from '../../devices/cuda/kernel-api.js';
import { PHILOX_CUDA } from '../mc_common/sources.js';
import { readPhiloxScalars } from './def.js';

export const PHILOX_FILL_CUDA_SOURCE = `${PHILOX_CUDA}
extern "C" __global__ void tdm_philox_fill(uint4* __restrict__ out, int n, unsigned first, unsigned block, unsigned k0, unsigned k1) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tdm_philox(make_uint4(first + (unsigned)i, block, 0u, 0u), k0, k1);
}`;

export const philoxFillCuda: CudaProgram = {
  kind: 'program',
  source: PHILOX_FILL_CUDA_SOURCE,
  entry: 'tdm_philox_fill',
  prelude: false,
  grid: (args) => [Math.max(1, Math.ceil(args[0]!.desc.shape[0]! / 256)), 1, 1],
  block: () => [256, 1, 1],
  params: (args, scalars) => {
    const s = readPhiloxScalars(scalars);
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'i32', value: args[0]!.desc.shape[0]! },
      { kind: 'u32', value: s.first },
      { kind: 'u32', value: s.block },
      { kind: 'u32', value: s.k0 },
      { kind: 'u32', value: s.k1 },
    ];
  },
};
