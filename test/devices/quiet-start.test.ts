/**
 * A quiet start: Dawn's native start-up warnings (written to fd 2 by its C++ code) and backends'
 * detail lines go to the debug log; `tandem devices` writes nothing on stderr (its table is the
 * summary); a command that opens devices prints exactly one summary line per backend.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, describe, it } from 'node:test';

const MAIN = join(process.cwd(), 'dist', 'src', 'cli', 'main.js');

function tandem(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [MAIN, ...args], {
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, TANDEM_LOG: '', ...env },
  });
  assert.equal(r.status, 0, `tandem ${args.join(' ')} exited ${r.status ?? r.signal}: ${r.stderr}`);
  return r;
}

describe('quiet start', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tandem-quiet-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('captures native writes to fd 2 for the debug log and gives our own lines back to stderr', () => {
    // In a child process, so the test runner's own stderr is never redirected.
    const script = join(dir, 'capture.mjs');
    const module = pathToFileURL(join(process.cwd(), 'dist/src/devices/webgpu/native-stderr.js')).href;
    writeFileSync(
      script,
      `import { writeSync } from 'node:fs';
import { withNativeStderr } from ${JSON.stringify(module)};
const lines = [];
const capture = (text) =>
  withNativeStderr((l) => lines.push(l), async () => {
    writeSync(2, text);
    await new Promise((r) => setTimeout(r, 20));
    return 42;
  });
// Two at once (two runtimes opening): each waits for the other, fd 2 comes back in order.
const [value] = await Promise.all([
  capture('Warning: written to fd 2 as Dawn does\\n\\n[tandem] a line of ours\\n'),
  capture('Warning: a second one\\n'),
]);
process.stderr.write('after\\n');
console.log(JSON.stringify({ value, lines }));
`,
    );
    const r = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), {
      value: 42,
      lines: ['dawn: Warning: written to fd 2 as Dawn does', 'dawn: Warning: a second one'],
    });
    assert.equal(r.stderr, '[tandem] a line of ours\nafter\n');
  });

  it('`tandem devices` writes nothing on stderr; TANDEM_LOG=debug shows the start-up detail', () => {
    const quiet = tandem(['devices', '--json', '--no-calibrate']);
    assert.equal(quiet.stderr, '');
    const backends = JSON.parse(quiet.stdout) as { backend: string; available: boolean }[];
    assert.deepEqual(
      backends.map((b) => b.backend),
      ['cpu', 'cuda', 'webgpu'],
    );
    const loud = tandem(['devices', '--json', '--no-calibrate'], { TANDEM_LOG: 'debug' });
    const lines = loud.stderr.split('\n').filter((l) => l !== '');
    for (const l of lines) assert.match(l, /^\[tandem debug\] /, `not a debug line: ${l}`);
    if (backends.find((b) => b.backend === 'webgpu')?.available)
      assert.ok(
        lines.some((l) => l.startsWith('[tandem debug] webgpu0: ')),
        `no webgpu detail in:\n${loud.stderr}`,
      );
    else console.log('# webgpu is unavailable here: its debug detail is not checked');
  });

  it('a command that opens devices prints one summary line per backend', () => {
    const r = tandem(['run', 'gemm', '--n', '32', '--dtype', 'f64']);
    const lines = r.stderr.split('\n').filter((l) => l !== '');
    assert.deepEqual(
      lines.map((l) => l.replace(/^\[tandem\] (\w+): .*$/, '$1')),
      ['cpu', 'cuda', 'webgpu'],
      r.stderr,
    );
    assert.match(lines[0]!, /^\[tandem\] cpu: cpu0 /);
  });
});
