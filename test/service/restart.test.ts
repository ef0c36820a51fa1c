/**
 * Durability for real: a `tandem serve` process is killed with SIGKILL while jobs run and wait; a new
 * process on the same data dir re-queues the running ones and finishes everything. Every accepted job
 * ends succeeded, exactly once (jobs interrupted mid-run show attempt 2).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { tempDir } from './helpers.js';
import { apiClient, serverGone, startServe, type ServeProcess } from './serve-process.js';

/** A server with no devices that runs two jobs at once, so that a kill interrupts more than one. */
function serve(dir: string): ServeProcess {
  return startServe(dir, ['--backends', 'none', '--max-running', '2']);
}

interface Job {
  id: string;
  state: string;
  attempt: number;
}

void test(
  'kill -9 while jobs run: after restart every accepted job finishes exactly once',
  { timeout: 90_000 },
  async () => {
    const dir = tempDir('tandem-restart-');
    // Assigned before each start is awaited, so that `finally` kills whichever server is the latest.
    let server = serve(dir);
    try {
      const { url, pid } = await server.next();
      const key = readFileSync(join(dir, 'admin-key.txt'), 'utf8').trim();
      let call = apiClient(url, key);
      const ids: string[] = [];
      for (let i = 0; i < 12; i++) {
        const job = await call<Job>('POST', '/v1/jobs', {
          type: 'sleep',
          params: { ms: 400, steps: 4 },
        });
        ids.push(job.id);
      }
      // Wait until two jobs run and at least one has finished, then pull the plug.
      for (let i = 0; i < 200; i++) {
        const { jobs } = await call<{ jobs: Job[] }>('GET', '/v1/jobs?limit=100');
        if (
          jobs.filter((j) => j.state === 'running').length === 2 &&
          jobs.some((j) => j.state === 'succeeded')
        )
          break;
        await new Promise((r) => setTimeout(r, 25));
      }
      server.kill('SIGKILL');
      await server.exited;
      // The supervisor is gone; its server notices within milliseconds (longer on a loaded box) and may
      // claim or finish a job meanwhile: read the database once the server itself is gone too.
      await serverGone(pid);
      // What was running at the kill, read from the database itself (the API could race the kill).
      const db = new Database(join(dir, 'tandem.sqlite'), { readonly: true });
      const running = db.prepare(`SELECT id FROM jobs WHERE state = 'running'`).all() as { id: string }[];
      db.close();
      const interrupted = running.map((r) => r.id);
      assert.ok(interrupted.length >= 1, 'at least one job was running at the kill');

      server = serve(dir);
      call = apiClient((await server.next()).url, key);
      const deadline = Date.now() + 60_000;
      let jobs: Job[] = [];
      while (Date.now() < deadline) {
        jobs = (await call<{ jobs: Job[] }>('GET', '/v1/jobs?limit=100')).jobs;
        if (jobs.every((j) => j.state === 'succeeded')) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.deepEqual(jobs.map((j) => j.id).sort(), [...ids].sort(), 'no accepted job lost');
      for (const j of jobs) {
        assert.equal(j.state, 'succeeded', j.id);
        assert.equal(j.attempt, interrupted.includes(j.id) ? 2 : 1, `${j.id} attempts`);
      }
    } finally {
      server.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

void test(
  'kill -9 while a ?wait job inserted running runs: after restart it runs again and finishes once',
  { timeout: 60_000 },
  async () => {
    const dir = tempDir('tandem-restart-wait-');
    let server = serve(dir);
    try {
      const { url } = await server.next();
      const key = readFileSync(join(dir, 'admin-key.txt'), 'utf8').trim();
      let call = apiClient(url, key);
      // Answered after the wait, still running: accepted, so it must survive the kill.
      const job = await call<Job & { waitSeconds: number }>('POST', '/v1/jobs?wait=0.2', {
        type: 'sleep',
        params: { ms: 3000 },
      });
      assert.equal(job.state, 'running', JSON.stringify(job));
      assert.equal(job.attempt, 1);
      assert.equal(job.waitSeconds, 0, 'started in its insert');
      server.kill('SIGKILL');
      await server.exited;
      server = serve(dir);
      call = apiClient((await server.next()).url, key);
      const deadline = Date.now() + 30_000;
      let after: Job = job;
      while (Date.now() < deadline && after.state !== 'succeeded') {
        await new Promise((r) => setTimeout(r, 100));
        after = await call<Job>('GET', `/v1/jobs/${job.id}`);
      }
      assert.equal(after.state, 'succeeded');
      assert.equal(after.attempt, 2, 're-queued at restart, run once more');
    } finally {
      server.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
