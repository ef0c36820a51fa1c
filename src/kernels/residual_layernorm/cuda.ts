/** residual_layernorm on CUDA: layernorm's warp-per-row program with RESID = 1 (layernorm/cuda.ts). */
import type { CudaNative } from '../../devices/cuda/kernel-api.js';
import { lnProgram, runLayernorm } from '../layernorm/cuda.js';

const RESIDUAL_LAYERNORM = lnProgram(true);

export const residualLayernormCuda: CudaNative = {
  kind: 'native',
  run: (ctx, args, scalars) => runLayernorm('residual_layernorm', RESIDUAL_LAYERNORM, ctx, args, scalars),
};
