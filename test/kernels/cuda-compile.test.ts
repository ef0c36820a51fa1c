/**
 * Every CUDA program of every conformance case compiles for sm_90: the exact text NVRTC would get
 * (cuda-sources.ts assembles it as the program cache does), compiled here with nvcc --ptx, so a
 * syntax, type or intrinsic error in a kernel shows on a machine without a GPU, before an H200 run
 * finds it. Skips with the reason when nvcc is absent. What the programs compute is the conformance
 * suite's job (the CUDA emulator here, the GPU in test/gpu/cuda-conformance.test.ts).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { collectCudaPrograms, type AssembledProgram } from './cuda-sources.js';
import { nvccUnavailable } from './nvcc.js';

const skip = nvccUnavailable();
if (skip) console.log(`# skip: ${skip}`);
const dir = mkdtempSync(join(tmpdir(), 'tandem-cuda-compile-'));
after(() => rmSync(dir, { recursive: true, force: true }));

// 177: a prelude helper the program does not use ("declared but never referenced").
const NVCC = ['--ptx', '-arch=sm_90', '-std=c++17', '-diag-suppress=177'];

/**
 * The programs `from`..`to` as one translation unit, each in a namespace of its own with its macros
 * undefined after it and without `extern "C"` (so equal entry names do not collide): nvcc parses its
 * implicit CUDA headers once for all of them (~0.015 s a program instead of ~0.4 s alone). A unit
 * that fails or warns is compiled again program by program, alone, as NVRTC would see each.
 */
function combined(programs: readonly AssembledProgram[]): string {
  return programs
    .map((p, i) => {
      const macros = new Set([...p.source.matchAll(/^\s*#\s*define\s+(\w+)/gm)].map((m) => m[1]!));
      const body = p.source.split('extern "C"').join('');
      return `namespace p${i} {\n${body}\n}\n${[...macros].map((m) => `#undef ${m}\n`).join('')}`;
    })
    .join('');
}

/** nvcc over `files` in one process: status and stderr. */
function nvcc(files: readonly string[]): Promise<{ ok: boolean; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn('nvcc', [...NVCC, ...files, '-odir', dir], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    p.on('close', (code) => resolve({ ok: code === 0, stderr }));
    p.on('error', (e) => resolve({ ok: false, stderr: String(e) }));
  });
}

void test(
  'every CUDA program of the conformance cases compiles with nvcc for sm_90',
  { skip, timeout: 900_000 },
  async () => {
    const t0 = performance.now();
    const { programs, cases, skipped } = collectCudaPrograms();
    assert.deepEqual(skipped, [], 'a CUDA implementation threw before launching');
    assert.ok(programs.length > 500, `only ${programs.length} programs collected`);
    const failures: string[] = [];
    const warnings: string[] = [];
    const describe = (p: AssembledProgram, stderr: string): string =>
      `${p.entry} (case "${p.from}"):\n${stderr.split('\n').slice(0, 12).join('\n')}`;
    const alone = async (i: number): Promise<void> => {
      const f = join(dir, `p${i}.cu`);
      writeFileSync(f, programs[i]!.source);
      const r = await nvcc([f]);
      if (!r.ok) failures.push(describe(programs[i]!, r.stderr));
      else if (/warning/i.test(r.stderr)) warnings.push(describe(programs[i]!, r.stderr));
    };
    const UNIT = 100;
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < programs.length) {
        const from = next;
        next = Math.min(programs.length, next + UNIT);
        const f = join(dir, `unit${from}.cu`);
        writeFileSync(f, combined(programs.slice(from, next)));
        const r = await nvcc([f]);
        if (r.ok && !/warning/i.test(r.stderr)) continue;
        for (let i = from; i < from + UNIT && i < programs.length; i++) await alone(i);
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, availableParallelism()) }, worker));
    console.log(
      `# ${programs.length} distinct programs (${new Set(programs.map((p) => p.entry)).size} entries) from ${cases} conformance cases compiled in ${((performance.now() - t0) / 1000).toFixed(0)} s`,
    );
    assert.deepEqual(failures, [], `${failures.length} programs failed to compile`);
    assert.deepEqual(warnings, [], `${warnings.length} programs compiled with warnings`);
  },
);

/**
 * NVRTC compiles without the host's math.h, float.h and limits.h, which nvcc's implicit CUDA headers
 * bring in: a kernel using INFINITY compiled above and failed on the H200 (onnx_roi_align, the
 * fifteenth session). So every program is also checked for those headers' macros, unless it defines
 * the name itself. Needs no nvcc.
 */
const HOST_HEADER_MACROS =
  /\b(INFINITY|NAN|HUGE_VALF?|M_(?:PI|E|SQRT2|LN2|LN10|LOG2E|LOG10E|PI_2|PI_4|1_PI|2_PI|2_SQRTPI|SQRT1_2)|(?:FLT|DBL)_(?:MAX|MIN|EPSILON|TRUE_MIN)|U?INT_(?:MAX|MIN)|U?LLONG_(?:MAX|MIN)|CHAR_BIT)\b/;

void test('no CUDA program relies on a host header NVRTC does not have', () => {
  const { programs } = collectCudaPrograms();
  const offenders = new Set<string>(); // entry: macro
  for (const p of programs) {
    const defined = new Set([...p.source.matchAll(/^\s*#\s*define\s+(\w+)/gm)].map((m) => m[1]!));
    const code = p.source.replace(/\/\/[^\n]*|\/\*[\s\S]*?\*\//g, '');
    const m = HOST_HEADER_MACROS.exec(code);
    if (m !== null && !defined.has(m[1]!)) offenders.add(`${p.entry}: ${m[1]!}`);
  }
  assert.deepEqual([...offenders], []);
});
