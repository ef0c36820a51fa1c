/** noop on WebGPU: no steps; the launch still goes through the queue, so it measures the queue's overhead. */
import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';

export const noopWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: () => true,
  plan: () => [],
};
