/**
 * Usage errors: typos in commands, flags and values get the closest match; every error exits non-zero
 * promptly with a stable code (as JSON under --json); and the case that used to hang (`run gemm
 * --device tpu`) ends at once.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { closest, deviceParser, editDistance, suggestion } from '../../src/cli/cli-options.js';
import { runCli } from './cli-process.js';

void test('closest: edit distance with swaps, prefixes, nothing for far-off words', () => {
  assert.equal(editDistance('tpu', 'cpu'), 1);
  assert.equal(editDistance('f23', 'f32'), 1, 'an adjacent swap counts one');
  assert.equal(editDistance('', 'abc'), 3);
  assert.deepEqual(closest('tpu', ['auto', 'cpu', 'cuda', 'webgpu']), ['cpu']);
  assert.deepEqual(closest('f23', ['f32', 'f64', 'f16', 'bf16']), ['f32']);
  assert.deepEqual(closest('web', ['cpu', 'cuda', 'webgpu']), ['webgpu']);
  assert.deepEqual(closest('CUDA', ['cpu', 'cuda', 'webgpu']), ['cuda']);
  assert.deepEqual(closest('quantum', ['cpu', 'cuda', 'webgpu']), []);
  assert.match(suggestion('quantum', ['cpu', 'cuda']), /^; one of: cpu, cuda$/);
  const device = deviceParser(false);
  assert.equal(device('cuda1'), 'cuda1', 'a device id is accepted');
  assert.equal(device('webgpu'), 'webgpu');
  assert.throws(() => device('tpu0'), /did you mean cpu\?/);
  assert.throws(() => device('auto'), /not known/, 'auto only where the command lets the scheduler choose');
});

const CASES: ReadonlyArray<readonly [args: string[], expect: RegExp]> = [
  [['run', 'gemm', '--device', 'tpu'], /device "tpu" is not known \(did you mean cpu\?\)/],
  [['run', 'gemm', '--dtype', 'f23'], /"f23" is not known \(did you mean f32\?\)/],
  [['run', 'gemm', '--reeps', '3'], /unknown option '--reeps'\n\(Did you mean --reps\?\)/],
  [['run', 'gemn'], /unknown command 'gemn'\n\(Did you mean gemm\?\)/],
  [['servee'], /unknown command 'servee'\n\(Did you mean serve\?\)/],
  [['run', 'option', '--device', 'webgpo'], /did you mean webgpu\?/],
  [['run', 'md', '--precision', 'f16'], /"f16" is not known; one of: f64, f32/],
  [['run', 'option', '--antithetic', 'maybe'], /must be true or false/],
  [['run', 'gemm', '--n', 'big'], /--n <n>' argument 'big' is invalid\. must be an integer/],
  [['serve', '--backends', 'cpu,cudda'], /backend "cudda" is not known \(did you mean cuda\?\)/],
  [['keys', 'create', 'bob', '--role', 'admn'], /did you mean admin\?/],
  [['status'], /missing required argument 'id'/],
  [['jobs', '--state', 'runing'], /"runing" is not known \(did you mean running\?\)/],
  [['agent'], /required option '--queue <url>' not specified/],
  [['run', 'gemm', 'extra'], /too many arguments/],
];

void test('usage errors exit 2 at once with the closest match and a pointer to --help', async () => {
  for (const [args, expect] of CASES) {
    const r = await runCli(args, { timeoutMs: 20_000 });
    const shown = `tandem ${args.join(' ')}`;
    assert.equal(r.code, 2, `${shown}: exit 2 (${r.stderr})`);
    assert.match(r.stderr, /^tandem: TANDEM_ERR_INVALID_ARGUMENT: /, shown);
    assert.match(r.stderr, expect, shown);
    assert.match(r.stderr, /`tandem [a-z ]*--help` shows the usage/, shown);
    assert.equal(r.stdout, '', `${shown}: nothing on stdout`);
  }
});

void test('under --json a usage error is one JSON error document on stdout', async () => {
  const r = await runCli(['run', 'gemm', '--device', 'tpu', '--json']);
  assert.equal(r.code, 2);
  const doc = JSON.parse(r.stdout) as { error: { code: string; message: string } };
  assert.equal(doc.error.code, 'TANDEM_ERR_INVALID_ARGUMENT');
  assert.match(doc.error.message, /did you mean cpu\?/);
});

void test('a runtime asked for an unknown backend fails at once and leaves nothing running', async () => {
  // Before: the CPU backend's worker threads were opened, the error thrown, and the process never ended.
  const script = `
    import(${JSON.stringify(join(process.cwd(), 'dist', 'src', 'runtime', 'runtime.js'))})
      .then((m) => m.Runtime.create({ backends: ['cpu', 'tpu'], calibrate: false }))
      .then(() => console.log('opened'), (e) => console.log('rejected: ' + e.message));`;
  const t0 = performance.now();
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  clearTimeout(timer);
  assert.equal(code, 0, `the process ended by itself (${(performance.now() - t0).toFixed(0)} ms): ${out}`);
  assert.match(out, /rejected: TANDEM_ERR_CONFIG: unknown backend "tpu"; known: cpu, cuda, webgpu/);
});

void test('a command that fails after opening devices exits non-zero promptly', async (t) => {
  const r = await runCli(['run', 'option', '--device', 'cuda', '--paths', '1000'], { timeoutMs: 30_000 });
  assert.notEqual(r.code, null, 'it ended by itself');
  if (r.code === 0) return t.skip('a CUDA device is present here, so the run succeeded: nothing failed');
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /TANDEM_ERR_NO_DEVICE/);
});

void test('tandem train with a directory as --data or a file as --checkpoint: a clear code before any step', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tandem-train-paths-'));
  // 4096 random token ids below gpt-micro's vocabulary of 256: data that trains.
  let x = 12345;
  const ids = Uint16Array.from({ length: 4096 }, () => {
    x = (x * 1103515245 + 12345) >>> 0;
    return x >>> 24;
  });
  const tokens = join(dir, 'tokens.u16');
  writeFileSync(tokens, Buffer.from(ids.buffer));
  const train = [
    'train',
    'gpt',
    '--preset',
    'gpt-micro',
    '--batch',
    '2',
    '--steps',
    '2',
    '--device',
    'cpu',
    '--json',
  ];
  const cases: ReadonlyArray<readonly [string[], string, RegExp]> = [
    // Was TANDEM_ERR_INTERNAL "EISDIR: illegal operation on a directory".
    [['--data', dir], 'TANDEM_ERR_BAD_DATA', /token file .* is a directory/],
    // Was TANDEM_ERR_INTERNAL "EEXIST" from mkdir, after every step had been trained.
    [
      ['--data', tokens, '--checkpoint', tokens],
      'TANDEM_ERR_INVALID_ARGUMENT',
      /checkpoint directory .* cannot be created: a file \(not a directory\) is in the way/,
    ],
  ];
  for (const [extra, code, text] of cases) {
    const r = await runCli([...train, ...extra], { timeoutMs: 60_000 });
    assert.equal(r.code, 2, `${extra.join(' ')}: ${r.stdout} ${r.stderr}`);
    const doc = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as {
      error: { code: string; message: string };
    };
    assert.equal(doc.error.code, code, doc.error.message);
    assert.match(doc.error.message, text);
    assert.ok(!r.stdout.includes('"event":"step"'), `no step ran: ${r.stdout.slice(0, 300)}`);
  }
  // The same data and a fresh directory train and keep a checkpoint.
  const ok = await runCli([...train, '--data', tokens, '--checkpoint', join(dir, 'ck')], {
    timeoutMs: 60_000,
  });
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, /"event":"step","step":2/);
});
