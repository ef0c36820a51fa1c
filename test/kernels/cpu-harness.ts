/** Runs one conformance case through a CPU kernel directly, on SharedArrayBuffer views as a worker sees them. */
import { type HostArray, hostView } from '../../src/core/dtype.js';
import type { CpuArg, CpuKernel, CpuKernelContext } from '../../src/devices/cpu/kernel-api.js';
import { loadOpenBlas } from '../../src/devices/cpu/openblas.js';
import type { ConformanceCase } from '../../src/kernels/conformance-cases.js';
import { checkCase, prepareCase } from '../../src/kernels/conformance.js';
import type { KernelDef } from '../../src/kernels/kernel.js';
import { KERNEL_DEFS, KERNEL_IMPLS } from '../../src/kernels/register.js';

export type GemmEngine = CpuKernelContext['gemmEngine'];

const openblas = loadOpenBlas();
export const OPENBLAS_REASON = openblas.reason;

export function cpuContext(engine: GemmEngine): CpuKernelContext {
  return { blas: openblas.blas, gemmEngine: engine, workerIndex: 0 };
}

export function defOf(op: string): KernelDef {
  const def = KERNEL_DEFS.find((d) => d.name === op);
  if (def === undefined) throw new Error(`no definition for ${op}`);
  return def;
}

export function cpuKernelOf(op: string): CpuKernel {
  const entry = KERNEL_IMPLS.find((e) => e.op === op && e.backend === 'cpu');
  if (entry === undefined) throw new Error(`no cpu kernel for ${op}`);
  return entry.impl as CpuKernel;
}

/** Validates, runs and checks `c` on the CPU; returns the mismatch lines (empty = pass). */
export function runCpuCase(c: ConformanceCase, engine: GemmEngine, seed = 1): string[] {
  const def = defOf(c.op);
  const prepared = prepareCase(def, c, seed);
  def.validate(prepared.descs, c.scalars);
  const results: Record<string, HostArray> = {};
  const args: CpuArg[] = def.args.map((spec) => {
    const desc = prepared.descs[spec.name]!;
    const init = prepared.initial[spec.name]!;
    // Views start 64 bytes into a larger buffer, as they do when the host pool sub-allocates.
    const data = hostView(desc.dtype, new SharedArrayBuffer(desc.bytes + 128), 64, init.length);
    (data as Uint8Array).set(init as Uint8Array);
    results[spec.name] = data;
    return { data, desc };
  });
  cpuKernelOf(c.op)(args, c.scalars, cpuContext(engine));
  return checkCase(c, prepared, results);
}
