import type { CpuKernel } from '../../devices/cpu/kernel-api.js';
import { ampParams, ampStep } from './params.js';

/** amp_update on the CPU: params.ts's ampStep on the tensors' values, written back in place. */
export const ampUpdateCpu: CpuKernel = (args, scalars) => {
  const [norm, scale, state, hyper, lr] = args.map((a) => a.data as Float64Array | Float32Array);
  const r = ampStep(ampParams('amp_update', scalars), lr![0]!, norm![0]!, scale![0]!, state![0]!, state![1]!);
  scale![0] = r.scale;
  state![0] = r.tracker;
  state![1] = r.steps;
  if (r.hyper !== null) hyper!.set(r.hyper);
};
