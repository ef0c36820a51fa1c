/**
 * A start that is refused says why, promptly and with a stable code: a second `tandem serve` on a data
 * dir a running server holds (the holder's pid and port in the message), a port another process holds
 * (no `TANDEM_ERR_INTERNAL: listen EADDRINUSE`), and a stale lock left by a dead server is taken over.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { startServe } from './serve-process.js';

const MAIN = join(process.cwd(), 'dist', 'src', 'cli', 'main.js');

interface Refusal {
  readonly status: number | null;
  readonly error: { code: string; message: string };
}

/** `tandem serve --json` expected to be refused: its exit code and error. */
function refusedServe(args: string[]): Refusal {
  const r = spawnSync(process.execPath, [MAIN, 'serve', ...args, '--json'], {
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, TANDEM_LOG: 'silent', TANDEM_BACKENDS: 'cpu', TANDEM_CALIBRATE: '0' },
  });
  const line = r.stdout.trim().split('\n').pop() ?? '';
  let parsed: { error?: Refusal['error'] };
  try {
    parsed = JSON.parse(line) as typeof parsed;
  } catch {
    throw new Error(`not a JSON error line: ${JSON.stringify(r.stdout)}; stderr: ${r.stderr}`);
  }
  assert.ok(parsed.error, `no error in ${line}`);
  return { status: r.status, error: parsed.error };
}

describe('start refusals', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tandem-start-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('a second server on the same data dir is refused, naming the holder pid and port', async () => {
    const dataDir = join(dir, 'shared');
    const first = startServe(dataDir, ['--backends', 'cpu', '--no-calibrate']);
    try {
      const line = await first.next(60_000);
      const port = Number(new URL(line.url).port);
      const lock = JSON.parse(readFileSync(join(dataDir, 'server.lock'), 'utf8')) as {
        pid: number;
        port: number;
      };
      assert.deepEqual([lock.pid, lock.port], [line.pid, port]);

      const second = refusedServe(['--port', '0', '--data-dir', dataDir]);
      assert.equal(second.status, 2);
      assert.equal(second.error.code, 'TANDEM_ERR_DATA_DIR_LOCKED');
      assert.match(second.error.message, new RegExp(`pid ${line.pid}\\b`));
      assert.match(second.error.message, new RegExp(`:${port}\\b`));
      // The first server still owns the lock and still answers.
      const health = await fetch(`${line.url}/healthz`);
      assert.equal(health.status, 200);
      assert.equal(
        (JSON.parse(readFileSync(join(dataDir, 'server.lock'), 'utf8')) as { pid: number }).pid,
        line.pid,
      );
    } finally {
      first.kill('SIGTERM');
      await first.exited;
    }
    assert.ok(!existsSync(join(dataDir, 'server.lock')), 'a clean stop releases the lock');
  });

  it('takes over a stale lock whose process is gone', async () => {
    const dataDir = join(dir, 'stale');
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
      encoding: 'utf8',
    });
    const deadPid = Number(dead.stdout);
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(
      join(dataDir, 'server.lock'),
      JSON.stringify({ pid: deadPid, host: '127.0.0.1', port: 1, startedAt: new Date(0).toISOString() }),
    );
    const s = startServe(dataDir, ['--backends', 'cpu', '--no-calibrate']);
    try {
      const line = await s.next(60_000);
      const lock = JSON.parse(readFileSync(join(dataDir, 'server.lock'), 'utf8')) as { pid: number };
      assert.equal(lock.pid, line.pid);
      assert.notEqual(lock.pid, deadPid);
    } finally {
      s.kill('SIGTERM');
      await s.exited;
    }
  });

  it('a port in use is said plainly', async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as AddressInfo).port;
    try {
      const dataDir = join(dir, 'port');
      const r = refusedServe(['--port', String(port), '--host', '127.0.0.1', '--data-dir', dataDir]);
      assert.equal(r.status, 2);
      assert.equal(r.error.code, 'TANDEM_ERR_PORT_IN_USE');
      assert.match(r.error.message, new RegExp(`port ${port} on 127\\.0\\.0\\.1 is already in use`));
      assert.doesNotMatch(r.error.message, /EADDRINUSE|INTERNAL/);
      assert.ok(!existsSync(join(dataDir, 'server.lock')), 'the refused server left its lock behind');
    } finally {
      holder.close();
    }
  });
});
