/**
 * `tandem serve` under its supervisor, with real processes and HTTP: kill -9 of the server process is
 * survived (same port and data dir, running and queued jobs finish), the server dies with its supervisor,
 * a crash loop ends with a message, a start that fails is not retried, and --no-supervise runs in-process.
 */
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { tempDir } from './helpers.js';
import { apiClient, startServe, type ServeProcess } from './serve-process.js';

/** A supervised server with no devices, one job at a time (so that a second job queues). */
function serve(dir: string, extra: string[] = [], env: Record<string, string> = {}): ServeProcess {
  return startServe(dir, ['--backends', 'none', '--max-running', '1', ...extra], env);
}

/** `p`, or a failure after `ms` (a process that does not exit must not hang the test runner). */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** Whether a process is alive (a zombie waiting to be reaped is not). */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

async function until(
  what: string,
  cond: () => boolean | Promise<boolean>,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

interface Job {
  id: string;
  state: string;
  attempt: number;
}

void describe('tandem serve supervisor', () => {
  void it(
    'relaunches a kill -9ed server on the same port and data dir; its running and queued jobs finish',
    { timeout: 90_000 },
    async () => {
      const dir = tempDir('tandem-sup-');
      const s = serve(dir);
      try {
        const first = await s.next();
        assert.notEqual(first.pid, s.proc.pid, 'the server is a child of the supervisor');
        assert.equal(first.restarts, 0);
        const key = readFileSync(join(dir, 'admin-key.txt'), 'utf8').trim();
        assert.equal(first.adminKey, key);
        const call = apiClient(first.url, key);
        const running = await call<Job>('POST', '/v1/jobs', {
          type: 'sleep',
          params: { ms: 1500, steps: 3 },
        });
        const queued = await call<Job>('POST', '/v1/jobs', { type: 'sleep', params: { ms: 50 } });
        await until(
          'the first job to run',
          async () => (await call<Job>('GET', `/v1/jobs/${running.id}`)).state === 'running',
        );

        process.kill(first.pid, 'SIGKILL');
        const second = await s.next();
        assert.equal(second.url, first.url, 'same port');
        assert.equal(second.restarts, 1);
        assert.equal(second.adminKey, null, 'the key is printed on the first start only');
        assert.notEqual(second.pid, first.pid);
        assert.match(s.stderr(), /killed by SIGKILL; relaunching/);
        await until('both jobs to finish', async () => {
          const { jobs } = await call<{ jobs: Job[] }>('GET', '/v1/jobs?limit=10');
          return jobs.length === 2 && jobs.every((j) => j.state === 'succeeded');
        });
        assert.equal(
          (await call<Job>('GET', `/v1/jobs/${running.id}`)).attempt,
          2,
          're-queued and run again',
        );
        assert.equal((await call<Job>('GET', `/v1/jobs/${queued.id}`)).attempt, 1);

        // A normal stop: SIGTERM reaches the server through the supervisor, which exits with its code.
        s.kill('SIGTERM');
        assert.equal(await within(s.exited, 10_000, 'exit after SIGTERM'), 0);
        await until('the server to exit', () => !alive(second.pid), 5000);
      } finally {
        s.kill();
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  void it('takes the server down with it when killed with -9', { timeout: 60_000 }, async () => {
    const dir = tempDir('tandem-sup-');
    const s = serve(dir);
    try {
      const { pid } = await s.next();
      s.kill('SIGKILL');
      await within(s.exited, 10_000, 'exit after SIGKILL');
      await until('the orphaned server to exit', () => !alive(pid), 5000);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  void it('stops a crash loop with a message', { timeout: 60_000 }, async () => {
    const dir = tempDir('tandem-sup-');
    const s = serve(dir, [], { TANDEM_RESTART_LIMIT: '1' });
    try {
      process.kill((await s.next()).pid, 'SIGKILL');
      process.kill((await s.next()).pid, 'SIGKILL');
      assert.equal(await within(s.exited, 20_000, 'giving up'), 128 + 9);
      assert.match(
        s.stderr(),
        /ended unexpectedly 2 times within 60 s, giving up \(TANDEM_RESTART_LIMIT=1\)/,
      );
    } finally {
      s.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  void it(
    'does not retry a server that never started, and --no-supervise serves in-process',
    { timeout: 60_000 },
    async () => {
      const dir = tempDir('tandem-sup-');
      // A bad flag is refused while the arguments are parsed: no server process is started at all.
      const bad = serve(dir, ['--max-running', 'many']);
      // A bad setting the server process itself finds (its config) ends it before it serves.
      const badConfig = serve(dir, [], { TANDEM_DURABILITY: 'sometimes' });
      const s = serve(dir, ['--no-supervise']);
      try {
        assert.equal(await within(bad.exited, 20_000, 'exit on a bad argument'), 2);
        assert.doesNotMatch(bad.stderr(), /supervisor/);
        assert.equal(await within(badConfig.exited, 20_000, 'exit on a bad config'), 2);
        assert.match(badConfig.stderr(), /exited with code 2 before it was serving; not relaunching/);
        assert.equal((await s.next()).pid, s.proc.pid);
      } finally {
        bad.kill();
        badConfig.kill();
        s.kill();
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
