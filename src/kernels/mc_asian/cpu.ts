import { mcCpu } from '../mc_common/cpu.js';

export const mcAsianCpu = mcCpu('mc_asian');
