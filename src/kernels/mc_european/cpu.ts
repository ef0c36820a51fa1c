import { mcCpu } from '../mc_common/cpu.js';

export const mcEuropeanCpu = mcCpu('mc_european');
