import type { CpuKernel } from '../../devices/cpu/kernel-api.js';
import { readVarScalars } from './def.js';
import { scenarioLosses } from './engine.js';
import { unpackPortfolio } from './layout.js';

export const mcVarCpu: CpuKernel = (args, scalars) => {
  const s = readVarScalars(scalars);
  const pf = unpackPortfolio(args[0]!.data, s.assets, s.positions, s.rate);
  const losses = args[1]!.data as Float32Array | Float64Array;
  scenarioLosses(pf, s.horizon, s.seed, s.v0, s.first, s.first + losses.length, losses);
};
