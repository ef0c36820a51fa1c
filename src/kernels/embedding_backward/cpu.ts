import type { CpuKernel } from '../../devices/cpu/kernel-api.js';
import { floatCopyOf, storeFloat } from '../common/cpu-float.js';
import { accumulateScalar } from '../common/norm-checks.js';

/** Sums into f64 copies of the tables and stores once, so f16/bf16 tables are rounded a single time. */
export const embeddingBackwardCpu: CpuKernel = (args, scalars) => {
  const [idsA, dyA, dwteA, dwpeA] = args;
  const ids = idsA!.data as Int32Array;
  const dy = floatCopyOf(dyA!);
  const [vocab, cols] = dwteA!.desc.shape as [number, number];
  const steps = idsA!.desc.shape[1]!;
  const acc = accumulateScalar('embedding_backward', scalars);
  const dwte = floatCopyOf(dwteA!);
  const dwpe = floatCopyOf(dwpeA!);
  const te = acc ? Float64Array.from(dwte) : new Float64Array(dwte.length);
  const pe = acc ? Float64Array.from(dwpe) : new Float64Array(dwpe.length);
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i]!;
    const src = i * cols;
    const pos = (i % steps) * cols;
    const row = id >= 0 && id < vocab ? id * cols : -1;
    for (let c = 0; c < cols; c++) {
      const g = dy[src + c]!;
      if (row >= 0) te[row + c]! += g;
      pe[pos + c]! += g;
    }
  }
  dwte.set(te);
  dwpe.set(pe);
  storeFloat(dwteA!, dwte);
  storeFloat(dwpeA!, dwpe);
};
