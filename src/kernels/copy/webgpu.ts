/** copy on WebGPU: a device-side buffer copy, bit for bit, so every dtype (f64 and bf16 too) works. */
import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';

export const copyWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args) => args.length === 2 && args[0]!.dtype === args[1]!.dtype,
  plan: (args) => [{ kind: 'copy', src: 0, dst: 1, bytes: args[0]!.bytes }],
};
