/**
 * The gemm job's CPU-worker kernels (loaded by the CPU device's worker threads as a `cpu-module`):
 * inputs are generated and the float64 reference is computed next to the data, so the service's event
 * loop never touches (or page-faults) the job's matrices and stays free for requests.
 */
import type { CpuKernel } from '../../../devices/cpu/kernel-api.js';
import { toNumbers } from '../../../core/dtype.js';
import { accumulateReference, fillUniform, regenerateRow } from './gemm-data.js';

/** x[k] = element `first` + k of the stream `key`, in x's dtype. */
export const gemmJobFill: CpuKernel = (args, scalars) => {
  const x = args[0]!;
  fillUniform(x.desc.dtype, x.data, Number(scalars['key']), Number(scalars['first']));
};

/** Rows listed in `rows` (of the panel c, whose first row is A's row `row0`) and their references A·B. */
export const gemmJobCheck: CpuKernel = (args, scalars) => {
  const [c, b, out] = args as [(typeof args)[0], (typeof args)[0], (typeof args)[0]];
  const dtype = b.desc.dtype;
  const n = b.desc.shape[1]!;
  const key = Number(scalars['key']);
  const row0 = Number(scalars['row0']);
  const rows = String(scalars['rows']).split(',').map(Number);
  const res = out.data as Float64Array;
  const aRows = rows.map((r) => regenerateRow(dtype, n, key, row0 + r));
  const refs = rows.map((_, i) => res.subarray((rows.length + i) * n, (rows.length + i + 1) * n));
  for (const ref of refs) ref.fill(0);
  accumulateReference(dtype, n, aRows, b.data, refs, 0, b.desc.shape[0]!);
  rows.forEach((r, i) => res.set(toNumbers(dtype, c.data.subarray(r * n, (r + 1) * n)), i * n));
};
