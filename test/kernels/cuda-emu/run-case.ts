/**
 * One conformance case through a kernel's CUDA implementation on the host emulator (host-cuda.ts), its
 * outputs checked against the float64 reference: the problems found, empty when it passes.
 */
import { type HostArray, hostView } from '../../../src/core/dtype.js';
import { numel } from '../../../src/core/shape.js';
import type { CudaKernelImpl, CudaNative } from '../../../src/devices/cuda/kernel-api.js';
import type { ConformanceCase } from '../../../src/kernels/case-types.js';
import { checkCase, prepareCase } from '../../../src/kernels/conformance.js';
import type { KernelDef } from '../../../src/kernels/kernel.js';
import { KERNEL_DEFS, KERNEL_IMPLS } from '../../../src/kernels/register.js';
import { runNativeOnHost } from './host-cuda.js';

/** `impl` (default: the op's registered CUDA implementation) as a native launcher. */
function asNative(impl: CudaKernelImpl): CudaNative {
  return impl.kind === 'native' ? impl : { kind: 'native', run: (ctx, args, s) => ctx.launch(impl, args, s) };
}

export function runCaseOnEmulator(
  c: ConformanceCase,
  opts: { def?: KernelDef; impl?: CudaKernelImpl } = {},
): string[] {
  const def = opts.def ?? KERNEL_DEFS.find((d) => d.name === c.op);
  const impl =
    opts.impl ?? (KERNEL_IMPLS.find((e) => e.op === c.op && e.backend === 'cuda')?.impl as CudaKernelImpl);
  if (def === undefined || impl === undefined) throw new Error(`no definition or CUDA kernel for ${c.op}`);
  const prepared = prepareCase(def, c);
  def.validate(prepared.descs, c.scalars);
  const descs = def.args.map((s) => prepared.descs[s.name]!);
  const initial = def.args.map((s) => {
    const a = prepared.initial[s.name]!;
    return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  });
  const { outputs } = runNativeOnHost(asNative(impl), descs, initial, c.scalars);
  const results: Record<string, HostArray> = {};
  def.args.forEach((s, i) => {
    const d = descs[i]!;
    // A copy: the view of a byte array at an odd offset could not be an aligned typed array.
    const bytes = Uint8Array.from(outputs[i]!);
    results[s.name] = hostView(d.dtype, bytes.buffer, 0, numel(d.shape));
  });
  return checkCase(c, prepared, results);
}
