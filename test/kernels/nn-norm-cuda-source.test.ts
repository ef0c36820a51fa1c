/**
 * Every CUDA program the norm group launches for its conformance cases and its model-size GPU cases
 * compiles for sm_90 with nvcc (the prelude and defines NVRTC gets; --ptx, no GPU needed), native
 * impls included: a recording context stands in for the device and collects each launch's source.
 * So a syntax or type error, in any dtype binding or vector width, shows before the H200 run. Skips
 * with the reason when nvcc is absent; whether the programs compute the right thing is
 * test/gpu/cuda-conformance.test.ts's and test/gpu/nn-norm-cuda.test.ts's job.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { Scalars } from '../../src/devices/device.js';
import type {
  CudaArg,
  CudaKernelContext,
  CudaKernelImpl,
  CudaProgram,
} from '../../src/devices/cuda/kernel-api.js';
import { defineLines, prelude } from '../../src/devices/cuda/prelude.js';
import { CONFORMANCE_CASES } from '../../src/kernels/conformance-cases.js';
import { prepareCase } from '../../src/kernels/conformance.js';
import { normGroup } from '../../src/kernels/nn/norm.js';
import { KERNEL_IMPLS } from '../../src/kernels/register.js';
import { defOf } from './cpu-harness.js';
import { NN_NORM_GPU_CASES } from './nn-norm-gpu-cases.js';
import { nvccUnavailable } from './nvcc.js';

const skip = nvccUnavailable();
if (skip) console.log(`# skip: ${skip}`);
const dir = mkdtempSync(join(tmpdir(), 'tandem-norm-cu-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Source text (what NVRTC compiles) -> a label naming the entry, dtypes and defines. */
const sources = new Map<string, string>();

function record(program: CudaProgram, args: readonly CudaArg[], scalars: Scalars): void {
  const dtypes = program.dtypes?.(args, scalars) ?? {};
  const defines = program.defines?.(args, scalars);
  // Geometry and parameters are built on the host: they must not throw either.
  program.grid(args, scalars);
  program.block(args, scalars);
  program.params(args, scalars);
  program.sharedBytes?.(args, scalars);
  // Fewer nvcc runs (each takes seconds on a shared machine): the scalar path (VEC 1) of the
  // vectorized programs in f32 only, and the column pass of layernorm_backward through the file of
  // its row pass (the same source text, which holds both kernels).
  if ((defines?.VEC === 1 && dtypes.X !== 'f32') || program.entry === 'tdm_lnb_cols') return;
  const source = prelude(dtypes) + (defines ? defineLines(defines) : '') + program.source;
  if (!sources.has(source))
    sources.set(source, `${program.entry} ${JSON.stringify(dtypes)} ${JSON.stringify(defines ?? {})}`);
}

// 256-byte aligned fake addresses, as the device allocator hands out: the vector paths get chosen.
let address = 1 << 20;
const allocate = (bytes: number): number => {
  const a = address;
  address += Math.ceil((bytes + 1) / 256) * 256;
  return a;
};
const context: CudaKernelContext = {
  arch: 'sm_90',
  smCount: 132,
  launch: record,
  scratch: allocate,
  gemm: () => assert.fail('the norm group uses no GEMM'),
  matmul: () => assert.fail('the norm group uses no GEMM'),
  memcpy: () => assert.fail('the norm group copies nothing'),
  tile: () => assert.fail('the norm group uses no tile routine'),
};
const ops = new Set(normGroup.defs.map((d) => d.name));
for (const c of [...CONFORMANCE_CASES.filter((x) => ops.has(x.op)), ...NN_NORM_GPU_CASES]) {
  const def = defOf(c.op);
  const prepared = prepareCase(def, c);
  const args: CudaArg[] = def.args.map((s) => {
    const desc = prepared.descs[s.name]!;
    return { desc, ptr: allocate(desc.bytes) };
  });
  const impl = KERNEL_IMPLS.find((e) => e.op === c.op && e.backend === 'cuda')?.impl as CudaKernelImpl;
  if (impl.kind === 'program') record(impl, args, c.scalars);
  else impl.run(context, args, c.scalars);
}

void describe('norm group CUDA programs compile with nvcc (sm_90)', { skip }, () => {
  let i = 0;
  for (const [source, label] of sources) {
    const file = join(dir, `p${i++}.cu`);
    void it(label, () => {
      writeFileSync(file, source);
      const r = spawnSync(
        'nvcc',
        ['--ptx', '-arch=sm_90', '-std=c++17', '-diag-suppress=177', file, '-o', `${file}.ptx`],
        { encoding: 'utf8' },
      );
      assert.equal(r.status, 0, r.stderr);
      assert.doesNotMatch(r.stderr, /warning/i);
    });
  }
  void it('the vector paths are among them (16-byte loads in every dtype)', () => {
    for (const vec of [2, 4, 8]) {
      assert.ok(
        [...sources.keys()].some((s) => s.includes(`#define VEC ${vec}\n`)),
        `VEC ${vec}`,
      );
    }
  });
});
