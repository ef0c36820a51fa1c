// Compiles, with a local nvcc (no GPU needed), every CUDA program that the conformance cases of the
// ops named on the command line would launch, native impls included (a recording context stands in
// for the device). Usage after npm run build: node scripts/nvcc-check.mjs layernorm softmax_xent ...
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
const root = new URL('../dist/src', import.meta.url).pathname;
const outDir = process.env.OUT_DIR ?? mkdtempSync(join(tmpdir(), 'nvcc-check-'));
const { CONFORMANCE_CASES } = await import(`${root}/kernels/conformance-cases.js`);
const { KERNEL_IMPLS, KERNEL_DEFS } = await import(`${root}/kernels/register.js`);
const { prepareCase } = await import(`${root}/kernels/conformance.js`);
const { prelude, defineLines } = await import(`${root}/devices/cuda/prelude.js`);
const ops = new Set(process.argv.slice(2));
const extra = JSON.parse(process.env.EXTRA ?? '[]');
const seen = new Map();
function compile(program, args, scalars) {
  const dtypes = program.dtypes?.(args, scalars);
  const defines = program.defines?.(args, scalars);
  const src =
    (program.prelude !== false ? prelude(dtypes ?? {}) : '') +
    (defines ? defineLines(defines) : '') +
    program.source;
  program.grid(args, scalars);
  program.block(args, scalars);
  program.params(args, scalars);
  program.sharedBytes?.(args, scalars);
  const h = createHash('sha1')
    .update(program.entry + src)
    .digest('hex')
    .slice(0, 10);
  if (seen.has(h)) return;
  seen.set(h, program.entry);
  const f = join(outDir, `${program.entry}-${h}.cu`);
  writeFileSync(f, src);
  try {
    execFileSync(
      'nvcc',
      ['-arch=sm_90', '-std=c++17', '-cubin', '-Xptxas', '-warn-spills', '-o', f.replace('.cu', '.cubin'), f],
      { stdio: 'pipe' },
    );
    console.log('ok', program.entry, JSON.stringify(dtypes), JSON.stringify(defines ?? {}));
  } catch (e) {
    console.log('FAIL', f, JSON.stringify(dtypes), JSON.stringify(defines ?? {}));
    console.log(String(e.stderr));
  }
}
let addr = 1 << 20;
const cases = [...CONFORMANCE_CASES.filter((c) => ops.has(c.op)), ...extra];
for (const c of cases) {
  const def = KERNEL_DEFS.find((d) => d.name === c.op);
  const p = prepareCase(def, c);
  const args = def.args.map((s) => ({ desc: p.descs[s.name], ptr: (addr += 4096) }));
  const impl = KERNEL_IMPLS.find((e) => e.op === c.op && e.backend === 'cuda')?.impl;
  if (!impl) {
    console.log('NO CUDA IMPL', c.op);
    continue;
  }
  if (impl.kind === 'program') compile(impl, args, c.scalars);
  else
    impl.run(
      {
        arch: 'sm_90',
        smCount: 132,
        launch: compile,
        scratch: (b) => {
          const a = addr + 4096;
          addr = a + Math.ceil(b / 4096) * 4096;
          return a;
        },
        gemm() {},
        memcpy() {},
        tile() {},
      },
      args,
      c.scalars,
    );
}
console.log('programs', seen.size);
