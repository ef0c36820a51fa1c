import type { CpuKernel } from '../../devices/cpu/kernel-api.js';
import { philox4x32 } from '../mc_common/philox.js';
import { readPhiloxScalars } from './def.js';

export const philoxFillCpu: CpuKernel = (args, scalars) => {
  const { first, block, k0, k1 } = readPhiloxScalars(scalars);
  const out = args[0]!.data as Int32Array;
  const w = new Uint32Array(4);
  for (let i = 0; i < out.length / 4; i++) {
    philox4x32(first + i, block, 0, 0, k0, k1, w);
    for (let k = 0; k < 4; k++) out[4 * i + k] = w[k]! | 0;
  }
};
