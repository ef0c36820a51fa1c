/**
 * Every CUDA program the kernels would hand NVRTC for the conformance cases, assembled exactly as the
 * CUDA backend's program cache does (prelude for the case's dtypes, defines, source) by running each
 * kernel's CUDA implementation against a context that records its launches instead of running them.
 * Used by cuda-compile.test.ts to compile them all with nvcc on a machine without a GPU.
 */
import { createHash } from 'node:crypto';
import type { Scalars } from '../../src/devices/device.js';
import type {
  CudaArg,
  CudaKernelContext,
  CudaKernelImpl,
  CudaNative,
  CudaProgram,
} from '../../src/devices/cuda/kernel-api.js';
import { defineLines, prelude } from '../../src/devices/cuda/prelude.js';
import { CONFORMANCE_CASES } from '../../src/kernels/conformance-cases.js';
import { prepareCase } from '../../src/kernels/conformance.js';

import { KERNEL_DEFS, KERNEL_IMPLS } from '../../src/kernels/register.js';
import { attentionCudaPath } from '../../src/kernels/attention/cuda.js';
import { attentionBackwardCudaPath } from '../../src/kernels/attention_backward/cuda.js';

/**
 * Kernel variants the registered implementations reach only by opt-in (TANDEM_ATTN_MMA) or on GPUs
 * older than these cases' sm_90 (v0's, forced by 'tensor-core'): compiled from the same cases too, so
 * an opt-in kernel that does not build fails here and not on the first GPU run.
 */
const OPT_IN: Readonly<Record<string, readonly CudaNative[]>> = {
  attention: [
    attentionCudaPath('tensor-core'),
    attentionCudaPath('tensor-core-v1'),
    attentionCudaPath('tensor-core-v3'),
  ],
  attention_backward: [
    attentionBackwardCudaPath('tensor-core'),
    attentionBackwardCudaPath('tensor-core-v1'),
    attentionBackwardCudaPath('tensor-core-v2'),
    attentionBackwardCudaPath('tensor-core-v4'),
  ],
};

export interface AssembledProgram {
  readonly entry: string;
  readonly source: string;
  /** The first conformance case that produced it (for the failure message). */
  readonly from: string;
}

/** The text NVRTC compiles for `program` with these arguments (program-cache.ts's assembly). */
export function assemble(program: CudaProgram, args: readonly CudaArg[], scalars: Scalars): string {
  const dtypes = program.dtypes?.(args, scalars);
  const defines = program.defines?.(args, scalars);
  return (
    (program.prelude !== false ? prelude(dtypes ?? {}) : '') +
    (defines ? defineLines(defines) : '') +
    program.source
  );
}

/** A context that records each launched program's assembled text; GEMMs and copies do nothing. */
function recordingContext(
  out: (p: CudaProgram, a: readonly CudaArg[], s: Scalars) => void,
): CudaKernelContext {
  let next = 1 << 30;
  return {
    arch: 'sm_90',
    smCount: 132,
    gemm: () => undefined,
    matmul: () => true,
    launch: out,
    scratch(bytes) {
      const p = next;
      next += Math.ceil(bytes / (1 << 20) + 1) * (1 << 20);
      return p;
    },
    memcpy: () => undefined,
    tile: () => undefined,
  };
}

/**
 * The distinct programs over every conformance case with a CUDA implementation; `skipped` lists the
 * cases whose implementation threw before launching (a case the CUDA kernel declines by throwing).
 */
export function collectCudaPrograms(): { programs: AssembledProgram[]; cases: number; skipped: string[] } {
  const byHash = new Map<string, AssembledProgram>();
  const skipped: string[] = [];
  let cases = 0;
  for (const c of CONFORMANCE_CASES) {
    const entry = KERNEL_IMPLS.find((e) => e.op === c.op && e.backend === 'cuda');
    const def = KERNEL_DEFS.find((d) => d.name === c.op);
    if (entry === undefined || def === undefined) continue;
    const impl = entry.impl as CudaKernelImpl;
    const prepared = prepareCase(def, c);
    const args: CudaArg[] = def.args.map((s, i) => ({
      ptr: (i + 1) * (1 << 20),
      desc: prepared.descs[s.name]!,
    }));
    cases++;
    const record = (p: CudaProgram, a: readonly CudaArg[], s: Scalars): void => {
      const source = assemble(p, a, s);
      const key = createHash('sha256').update(p.entry).update(source).digest('hex');
      if (!byHash.has(key)) byHash.set(key, { entry: p.entry, source, from: c.name });
    };
    try {
      def.validate(prepared.descs, c.scalars);
      if (impl.kind === 'program') record(impl, args, c.scalars);
      else impl.run(recordingContext(record), args, c.scalars);
    } catch (e) {
      skipped.push(`${c.name}: ${(e as Error).message.split('\n')[0]}`);
    }
    for (const variant of OPT_IN[c.op] ?? []) {
      try {
        variant.run(recordingContext(record), args, c.scalars);
      } catch {
        // A case the variant does not take (head dim, dtype): the registered path covered it above.
      }
    }
  }
  return { programs: [...byHash.values()], cases, skipped };
}
