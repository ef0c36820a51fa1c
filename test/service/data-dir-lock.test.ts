/**
 * The data-dir lock against real processes: a holder on its way out is not a reason to refuse. kill -9
 * of `tandem serve` kills the supervisor and leaves its server alive for a moment (it kills itself when
 * it notices); a zombie holder has exited but still answers signal 0. A holder that is really serving is
 * still refused at once.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { TandemError } from '../../src/core/errors.js';
import { lockDataDir, type LockHolder } from '../../src/service/store/data-dir-lock.js';
import { tempDir } from './helpers.js';

/** The pid of a process that has exited and been reaped. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
    encoding: 'utf8',
  });
  return Number(r.stdout);
}

/** A live process that exits by itself after `ms`. */
async function liveFor(ms: number): Promise<ChildProcess> {
  const c = spawn(process.execPath, ['-e', `setTimeout(() => {}, ${ms})`], { stdio: 'ignore' });
  await new Promise<void>((resolve) => c.once('spawn', () => resolve()));
  return c;
}

function writeLock(dataDir: string, holder: Omit<LockHolder, 'host' | 'startedAt'>): void {
  writeFileSync(
    join(dataDir, 'server.lock'),
    JSON.stringify({ host: '127.0.0.1', startedAt: new Date().toISOString(), ...holder }),
  );
}

/** The state letter in /proc/<pid>/stat (R, S, Z …), null when the process is gone. */
function procState(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0] ?? null;
  } catch {
    return null;
  }
}

function lockPid(dataDir: string): number {
  return (JSON.parse(readFileSync(join(dataDir, 'server.lock'), 'utf8')) as LockHolder).pid;
}

describe('data-dir lock', () => {
  it('waits for a holder whose supervisor is gone, then takes the lock over', async () => {
    const dataDir = tempDir('tandem-lock-orphan-');
    const holder = await liveFor(400);
    const exited = new Promise<number>((resolve) => holder.once('exit', () => resolve(Date.now())));
    try {
      writeLock(dataDir, { pid: holder.pid!, port: 1, supervisor: deadPid() });
      const lock = await lockDataDir(dataDir, '127.0.0.1', null);
      const tookAt = Date.now();
      assert.equal(lockPid(dataDir), process.pid);
      // Gone by then: exited, or a zombie this process has not reaped yet (the lock counts that as gone).
      const state = holder.exitCode !== null ? 'exited' : procState(holder.pid!);
      assert.ok(
        state === 'exited' || state === 'Z' || state === 'X' || state === null,
        `holder was ${state}`,
      );
      assert.ok((await exited) - tookAt < 1000, 'the holder had exited when the lock was taken');
      lock.release();
      assert.ok(!existsSync(join(dataDir, 'server.lock')));
    } finally {
      holder.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('refuses, naming it, a holder whose supervisor is gone but that does not exit in time', async () => {
    const dataDir = tempDir('tandem-lock-stuck-');
    const holder = await liveFor(30_000);
    try {
      writeLock(dataDir, { pid: holder.pid!, port: 4321, supervisor: deadPid() });
      const t0 = Date.now();
      await assert.rejects(lockDataDir(dataDir, '127.0.0.1', null, { orphanExitWaitMs: 300 }), (e) => {
        assert.ok(e instanceof TandemError);
        assert.equal(e.code, 'TANDEM_ERR_DATA_DIR_LOCKED');
        assert.match(e.message, new RegExp(`pid ${holder.pid}\\b.*:4321\\b.*did not exit within 300 ms`));
        return true;
      });
      assert.ok(Date.now() - t0 >= 300, 'waited the bound before refusing');
      assert.equal(lockPid(dataDir), holder.pid, 'the holder keeps its lock');
    } finally {
      holder.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('refuses at once a live holder whose supervisor lives, or that has none', async () => {
    const dataDir = tempDir('tandem-lock-live-');
    const holder = await liveFor(30_000);
    try {
      for (const supervisor of [process.pid, null]) {
        writeLock(dataDir, { pid: holder.pid!, port: 4321, supervisor });
        const t0 = Date.now();
        await assert.rejects(lockDataDir(dataDir, '127.0.0.1', null), (e) => {
          assert.ok(e instanceof TandemError);
          assert.equal(e.code, 'TANDEM_ERR_DATA_DIR_LOCKED');
          assert.match(e.message, new RegExp(`pid ${holder.pid}, serving on 127\\.0\\.0\\.1:4321\\)`));
          return true;
        });
        assert.ok(Date.now() - t0 < 1000, `refused at once (supervisor ${supervisor})`);
        assert.equal(lockPid(dataDir), holder.pid);
      }
    } finally {
      holder.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('takes over a lock held by a zombie (exited, not yet reaped)', async (t) => {
    if (!existsSync('/proc/self/stat')) return t.skip('no /proc here: zombies are only told apart on Linux');
    const dataDir = tempDir('tandem-lock-zombie-');
    // `sleep 5` (exec'd over the shell) never reaps its background child, which stays a zombie meanwhile.
    const parent = spawn('sh', ['-c', 'sleep 0 & echo $!; exec sleep 5'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    try {
      const zombie = Number(
        await new Promise<string>((resolve) =>
          parent.stdout!.once('data', (b: Buffer) => resolve(String(b))),
        ),
      );
      const state = (): string => readFileSync(`/proc/${zombie}/stat`, 'utf8').split(') ')[1]![0]!;
      for (let i = 0; i < 100 && state() !== 'Z'; i++) await new Promise((r) => setTimeout(r, 10));
      assert.equal(state(), 'Z', 'the holder is a zombie');
      process.kill(zombie, 0); // ... which still answers signal 0
      writeLock(dataDir, { pid: zombie, port: 1, supervisor: null });
      const lock = await lockDataDir(dataDir, '127.0.0.1', null);
      assert.equal(lockPid(dataDir), process.pid);
      lock.release();
    } finally {
      parent.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
