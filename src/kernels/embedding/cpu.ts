import type { CpuKernel } from '../../devices/cpu/kernel-api.js';
import { floatCopyOf, storeFloat } from '../common/cpu-float.js';
import { outputView } from '../layernorm/cpu.js';

export const embeddingCpu: CpuKernel = (args) => {
  const [idsA, wteA, wpeA, yA] = args;
  const ids = idsA!.data as Int32Array;
  const wte = floatCopyOf(wteA!);
  const wpe = floatCopyOf(wpeA!);
  const [vocab, cols] = wteA!.desc.shape as [number, number];
  const steps = idsA!.desc.shape[1]!;
  const y = outputView(yA!);
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i]!;
    const out = i * cols;
    const pos = (i % steps) * cols;
    if (id < 0 || id >= vocab) {
      y.fill(NaN, out, out + cols);
      continue;
    }
    const row = id * cols;
    for (let c = 0; c < cols; c++) y[out + c] = wte[row + c]! + wpe[pos + c]!;
  }
  storeFloat(yA!, y);
};
