/**
 * `tandem run ...` on the CPU through the real runtime: `run var` with its documented default
 * portfolio, workload flags reaching the workload (booleans, numbers), output files under .tandem/ of
 * the working directory, and no progress bar when the output is not a terminal.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { tempDir } from '../service/helpers.js';
import { runCli } from './cli-process.js';

void test(
  'run var works with the example portfolio when --portfolio is not given',
  { timeout: 60_000 },
  async () => {
    const r = await runCli(['run', 'var', '--scenarios', '2000', '--device', 'cpu', '--json']);
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { valueAtRisk: number; portfolioValue: number; scenarios: number };
    assert.equal(out.scenarios, 2000);
    // EXAMPLE_PORTFOLIO: 1000 ACME at 100 + 2000 GLOBEX at 50 in stock alone is 200,000 (options aside).
    assert.ok(out.portfolioValue > 150_000 && out.portfolioValue < 250_000, `value ${out.portfolioValue}`);
    assert.ok(out.valueAtRisk > 0 && Number.isFinite(out.valueAtRisk));
  },
);

void test(
  'run var --portfolio reads the file and reports a bad one clearly',
  { timeout: 60_000 },
  async () => {
    const dir = tempDir('tandem-cli-var-');
    try {
      const missing = await runCli(['run', 'var', '--portfolio', join(dir, 'nope.json')]);
      assert.equal(missing.code, 2);
      assert.match(missing.stderr, /TANDEM_ERR_INVALID_ARGUMENT: --portfolio .*nope\.json/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

void test('run option: flags reach the workload (numbers, booleans)', { timeout: 60_000 }, async () => {
  const off = await runCli([
    'run',
    'option',
    '--paths',
    '20000',
    '--antithetic',
    'false',
    '--device',
    'cpu',
    '--json',
  ]);
  assert.equal(off.code, 0, off.stderr);
  const a = JSON.parse(off.stdout) as { antithetic: boolean; paths: number; price: number };
  assert.equal(a.antithetic, false);
  assert.equal(a.paths, 20000);
  const on = await runCli(['run', 'option', '--paths', '20000', '--antithetic', '--strike', '90', '--json']);
  assert.equal(on.code, 0, on.stderr);
  const b = JSON.parse(on.stdout) as { antithetic: boolean; price: number };
  assert.equal(b.antithetic, true);
  assert.ok(b.price > a.price, 'a lower strike prices the call higher');
  // A value the workload's own validator refuses keeps its field-naming message.
  const bad = await runCli(['run', 'option', '--vol', '-1']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /option\.vol must be > 0/);
});

void test('run md on a pipe: the result only, no progress bar', { timeout: 120_000 }, async () => {
  const r = await runCli([
    'run',
    'md',
    '--preset',
    'lj-small',
    '--steps',
    '20',
    '--thermo-every',
    '10',
    '--device',
    'cpu',
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /Lennard-Jones MD: 500 atoms, 20 steps on cpu/);
  assert.doesNotMatch(r.stderr + r.stdout, /█|░|\[=+|%\s*\|/, 'no bar drawn when not on a terminal');
});

void test(
  'run gemm --trace with no file writes under .tandem/traces of the working directory',
  { timeout: 60_000 },
  async () => {
    const dir = tempDir('tandem-cli-trace-');
    try {
      const r = await runCli(['run', 'gemm', '--n', '32', '--device', 'cpu', '--trace', '--json'], {
        cwd: dir,
      });
      assert.equal(r.code, 0, r.stderr);
      const out = JSON.parse(r.stdout) as { trace: string; check: { ok: boolean } };
      assert.ok(out.check.ok);
      assert.equal(join(dir, '.tandem', 'traces'), out.trace.slice(0, out.trace.lastIndexOf('/')));
      const trace = JSON.parse(readFileSync(out.trace, 'utf8')) as { traceEvents: unknown[] };
      assert.ok(trace.traceEvents.length > 0);
      assert.deepEqual(
        readdirSync(dir).filter((f) => f !== '.tandem'),
        [],
        'nothing written into the working directory itself',
      );
      // An explicit file is used as given.
      const given = await runCli(['run', 'gemm', '--n', '16', '--device', 'cpu', '--trace', 'sub/g.json'], {
        cwd: dir,
      });
      assert.equal(given.code, 0, given.stderr);
      assert.ok(existsSync(join(dir, 'sub', 'g.json')));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
