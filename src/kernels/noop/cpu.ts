import type { CpuKernel } from '../../devices/cpu/kernel-api.js';

export const noopCpu: CpuKernel = () => {};
