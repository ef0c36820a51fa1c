/** CUDA potrf: cuSOLVER s/dpotrf on the whole tile (row-major lower ↔ column-major upper, see tile-ops.ts). */
import type { CudaArg, CudaNative } from '../../devices/cuda/kernel-api.js';

export const potrfCuda: CudaNative = {
  kind: 'native',
  run(ctx, args) {
    const a = args[0] as CudaArg;
    ctx.tile({ op: 'potrf', dtype: a.desc.dtype === 'f64' ? 'f64' : 'f32', n: a.desc.shape[0]!, a: a.ptr });
  },
};
