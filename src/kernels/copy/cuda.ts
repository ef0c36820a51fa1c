/** copy on CUDA: a device-to-device cuMemcpyAsync on the compute stream (no kernel needed). */
import type { CudaNative } from '../../devices/cuda/kernel-api.js';

export const copyCuda: CudaNative = {
  kind: 'native',
  run(ctx, args) {
    const [x, y] = args;
    ctx.memcpy(y!.ptr, x!.ptr, Math.min(x!.desc.bytes, y!.desc.bytes));
  },
};
