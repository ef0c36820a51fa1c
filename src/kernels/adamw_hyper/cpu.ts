import type { CpuKernel } from '../../devices/cpu/kernel-api.js';
import { adamwCpuWith, hyperUpdate } from '../adamw/cpu.js';
import { adamwMixedCpuWith } from '../adamw_mixed/cpu.js';

/** adamw_hyper on the CPU: adamw's loop, the step's constants read from `hyper` (argument 5). */
export const adamwHyperCpu: CpuKernel = adamwCpuWith(hyperUpdate('adamw_hyper', 5));

/** adamw_mixed_hyper on the CPU: adamw_mixed's loop, the constants from `hyper` (argument 6). */
export const adamwMixedHyperCpu: CpuKernel = adamwMixedCpuWith(hyperUpdate('adamw_mixed_hyper', 6));
