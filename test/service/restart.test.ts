/**
 * Durability for real: a `tandem serve` process is killed with SIGKILL while jobs run and wait; a new
 * process on the same data dir re-queues the running ones and finishes everything. Every accepted job
 * ends succeeded, exactly once (jobs interrupted mid-run show attempt 2).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import Database from 'better-sqlite3';
import { tempDir } from './helpers.js';

const MAIN = join(process.cwd(), 'dist', 'src', 'cli', 'main.js');

interface Started {
  child: ChildProcess;
  url: string;
}

async function startServe(dataDir: string): Promise<Started> {
  const child = spawn(
    process.execPath,
    [
      MAIN,
      'serve',
      '--port',
      '0',
      '--data-dir',
      dataDir,
      '--backends',
      'none',
      '--max-running',
      '2',
      '--json',
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, TANDEM_LOG: 'silent' },
    },
  );
  const lines = createInterface({ input: child.stdout! });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('serve did not start in 20 s')), 20_000);
    lines.once('line', (l) => {
      clearTimeout(timer);
      try {
        resolve((JSON.parse(l) as { url: string }).url);
      } catch (e) {
        child.kill('SIGKILL');
        reject(e instanceof Error ? e : new Error(String(e)));
      }
    });
    child.once('exit', (code) => reject(new Error(`serve exited early with ${code}`)));
  });
  return { child, url };
}

async function call<T>(url: string, key: string, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return (await res.json()) as T;
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
    let server = await startServe(dir);
    try {
      const key = readFileSync(join(dir, 'admin-key.txt'), 'utf8').trim();
      const ids: string[] = [];
      for (let i = 0; i < 12; i++) {
        const job = await call<Job>(server.url, key, 'POST', '/v1/jobs', {
          type: 'sleep',
          params: { ms: 400, steps: 4 },
        });
        ids.push(job.id);
      }
      // Wait until two jobs run and at least one has finished, then pull the plug.
      for (let i = 0; i < 200; i++) {
        const { jobs } = await call<{ jobs: Job[] }>(server.url, key, 'GET', '/v1/jobs?limit=100');
        if (
          jobs.filter((j) => j.state === 'running').length === 2 &&
          jobs.some((j) => j.state === 'succeeded')
        )
          break;
        await new Promise((r) => setTimeout(r, 25));
      }
      server.child.kill('SIGKILL');
      await new Promise((r) => server.child.once('exit', r));
      // What was running at the kill, read from the database itself (the API could race the kill).
      const db = new Database(join(dir, 'tandem.sqlite'), { readonly: true });
      const running = db.prepare(`SELECT id FROM jobs WHERE state = 'running'`).all() as { id: string }[];
      db.close();
      const interrupted = running.map((r) => r.id);
      assert.ok(interrupted.length >= 1, 'at least one job was running at the kill');

      server = await startServe(dir);
      const deadline = Date.now() + 60_000;
      let jobs: Job[] = [];
      while (Date.now() < deadline) {
        jobs = (await call<{ jobs: Job[] }>(server.url, key, 'GET', '/v1/jobs?limit=100')).jobs;
        if (jobs.every((j) => j.state === 'succeeded')) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.deepEqual(jobs.map((j) => j.id).sort(), [...ids].sort(), 'no accepted job lost');
      for (const j of jobs) {
        assert.equal(j.state, 'succeeded', j.id);
        assert.equal(j.attempt, interrupted.includes(j.id) ? 2 : 1, `${j.id} attempts`);
      }
    } finally {
      server.child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

void test(
  'kill -9 while a ?wait job inserted running runs: after restart it runs again and finishes once',
  { timeout: 60_000 },
  async () => {
    const dir = tempDir('tandem-restart-wait-');
    let server = await startServe(dir);
    try {
      const key = readFileSync(join(dir, 'admin-key.txt'), 'utf8').trim();
      // Answered after the wait, still running: accepted, so it must survive the kill.
      const job = await call<Job & { waitSeconds: number }>(server.url, key, 'POST', '/v1/jobs?wait=0.2', {
        type: 'sleep',
        params: { ms: 3000 },
      });
      assert.equal(job.state, 'running', JSON.stringify(job));
      assert.equal(job.attempt, 1);
      assert.equal(job.waitSeconds, 0, 'started in its insert');
      server.child.kill('SIGKILL');
      await new Promise((r) => server.child.once('exit', r));
      server = await startServe(dir);
      const deadline = Date.now() + 30_000;
      let after: Job = job;
      while (Date.now() < deadline && after.state !== 'succeeded') {
        await new Promise((r) => setTimeout(r, 100));
        after = await call<Job>(server.url, key, 'GET', `/v1/jobs/${job.id}`);
      }
      assert.equal(after.state, 'succeeded');
      assert.equal(after.attempt, 2, 're-queued at restart, run once more');
    } finally {
      server.child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
