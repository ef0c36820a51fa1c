/**
 * attention on CUDA: the tensor-core kernel (cuda-mma.ts) for f16/bf16 with a head dim it tiles, the
 * CUDA-core flash kernel (cuda-generic.ts) for everything else. Both write y and lse in one pass.
 */
import type { CudaNative, CudaProgram } from '../../devices/cuda/kernel-api.js';
import { GENERIC_FORWARD } from './cuda-generic.js';
import { L, asScalars, genericProgram, genericRows, launchOf } from './cuda-plan.js';

/** args: qkv 0, y 1, lse 2. */
export const ATTENTION_FORWARD_GENERIC: CudaProgram = {
  ...genericProgram(GENERIC_FORWARD, 'tdm_attn_fwd', 0, 2),
  grid: (_a, s) => [L(s).batch * L(s).heads, Math.ceil(L(s).seq / genericRows(L(s))), 1],
  params: (_a, s) => [
    { kind: 'ptr', arg: 0 },
    { kind: 'ptr', arg: 1 },
    { kind: 'ptr', arg: 2 },
    { kind: 'i32', value: L(s).seq },
    { kind: 'i32', value: L(s).heads },
    { kind: 'f64', value: L(s).scale },
  ],
};

export const attentionCuda: CudaNative = {
  kind: 'native',
  run(ctx, args, scalars) {
    const launch = launchOf('attention', args[0]!, scalars);
    if (launch.batch === 0 || launch.seq === 0) return;
    ctx.launch(ATTENTION_FORWARD_GENERIC, args, asScalars(launch));
  },
};
