/**
 * A full disk (issue 19, finding 7): a finishing job's commit that fails is retried until it lands, a
 * claim the store refuses leaves the job queued, `/healthz` says `store: degraded` with the last error,
 * and once there is room again every acknowledged job ends — none stays `running` without a worker,
 * none is lost. For real on a small tmpfs (needs root to mount; skipped with the reason otherwise),
 * and through SQLite's own size limit (`PRAGMA max_page_count`, the same SQLITE_FULL), which runs
 * anywhere.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readdirSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_CONFIG } from '../../src/service/config.js';
import { defineJobType } from '../../src/service/jobs/job-type.js';
import { JobTypeRegistry } from '../../src/service/jobs/registry.js';
import { registerBuiltinJobTypes } from '../../src/service/jobs/builtin.js';
import type { StoreHealthView } from '../../src/service/store/store-health.js';
import { tempDir, testService, type TestService } from './helpers.js';

/** Mounts a tmpfs of `mib` MiB, or says why it cannot. */
function mountTmpfs(mib: number): { dir: string; unmount(): void } | string {
  const dir = tempDir('tandem-full-');
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${mib}m`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    const err = e as { stderr?: Buffer; message: string };
    return `cannot mount a tmpfs here (${(err.stderr?.toString() || err.message).trim()})`;
  }
  return {
    dir,
    unmount: () => {
      execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Writes a file until the file system has no byte left; returns its path. */
function fillDisk(dir: string): string {
  const path = join(dir, 'filler');
  const fd = openSync(path, 'w');
  try {
    for (const size of [1 << 20, 64 << 10, 4096, 512, 1])
      try {
        const block = Buffer.alloc(size, 1);
        for (;;) writeSync(fd, block);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
      }
  } finally {
    closeSync(fd);
  }
  return path;
}

/** A job that waits `ms` and returns `bytes` of JSON (under the inline limit: stored in its row). */
function resultJob(name: string, bytes: number) {
  return defineJobType<{ ms: number }>({
    name,
    description: `returns ${bytes} bytes`,
    paramsSchema: { type: 'object' },
    parse: (raw) => ({ ms: Number(raw['ms'] ?? 0) }),
    memoryBytes: () => 0,
    jobClass: () => 'batch',
    run: async (ctx) => {
      await new Promise((r) => setTimeout(r, ctx.params.ms));
      return { blob: 'x'.repeat(bytes) };
    },
  });
}

/** The built-in job types, a `blob` job of 24 KiB results and a `big-result` one of 8 MiB. */
async function registry(): Promise<JobTypeRegistry> {
  const r = new JobTypeRegistry();
  await registerBuiltinJobTypes(r);
  r.register(resultJob('blob', 24 << 10)); // each finish writes ~6 pages: the WAL must grow
  r.register(resultJob('big-result', 8 << 20)); // a result file
  return r;
}

/** 4 running at a time, 100 ms each: 3 s of work, so jobs are still queued once all are submitted. */
const JOBS = 120;
const JOB_MS = 100;

async function submitMany(t: TestService, n: number, ms: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await t.svc.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: t.auth(),
      payload: { type: 'blob', params: { ms } },
    });
    assert.equal(res.statusCode, 202, res.body);
    ids.push((res.json() as { id: string }).id);
  }
  return ids;
}

/** The store's health from /healthz (undefined where /healthz does not report it). */
async function storeHealth(t: TestService): Promise<StoreHealthView | undefined> {
  const res = await t.svc.app.inject({ url: '/healthz' });
  assert.equal(res.statusCode, 200);
  return (res.json() as { store?: StoreHealthView }).store;
}

/** Polls until `done()` or `ms` pass; returns whether it came true. */
async function until(done: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await done()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return done();
}

/**
 * While the store refuses writes: the jobs that finish or start meet errors; `/healthz` shows it; more
 * submissions are refused (never acknowledged). Then `free()`, and every acknowledged job must end.
 */
async function fullThenFreed(
  t: TestService,
  acknowledged: string[],
  free: () => void,
  requireFailure = true,
): Promise<string> {
  // Wait until a finishing job's commit has failed (its outcome waits for the store).
  let sawPending = 0;
  let sawError = '';
  await until(async () => {
    const h = await storeHealth(t);
    sawPending = Math.max(sawPending, h?.pendingOutcomes ?? 0);
    if (h?.state === 'degraded') sawError = h.lastError ?? '';
    return sawPending > 0;
  }, 20_000);
  // A submission now is answered with an error (never a 202 for a job that is not stored).
  const refused = await t.svc.app.inject({
    method: 'POST',
    url: '/v1/jobs',
    headers: t.auth(),
    payload: { type: 'sleep', params: { ms: 1 } },
  });
  if (refused.statusCode === 202) acknowledged.push((refused.json() as { id: string }).id);
  else assert.equal(refused.statusCode, 503, refused.body);

  free();
  const drained = await until(() => {
    const c = t.svc.store.countsByState();
    return c.queued + c.running === 0 && t.svc.dispatcher.runningCount === 0;
  }, 60_000);
  const counts = t.svc.store.countsByState();
  // The figure: 0 jobs running without a worker, 0 acknowledged jobs lost (each one ended as it ran).
  assert.ok(drained, `after freeing: ${JSON.stringify(counts)}, ${t.svc.dispatcher.runningCount} in memory`);
  assert.equal(counts.running, 0);
  const lost = acknowledged.filter((id) => t.svc.store.get(id)?.state !== 'succeeded');
  assert.deepEqual(lost, [], 'every acknowledged job succeeded');
  // The failure path was exercised, and /healthz said so while it lasted. On a full tmpfs a commit may
  // still fit in WAL pages the checkpointer already freed, so there it is reported, not required; the
  // max_page_count test below always meets it.
  if (requireFailure || sawPending > 0) {
    assert.ok(sawPending > 0, 'a finish commit failed while the store was full');
    assert.match(sawError, /full/i);
  }
  assert.ok(await until(async () => (await storeHealth(t))?.state === 'ok', 5000), 'store ok again');
  return `${acknowledged.length} acknowledged jobs, up to ${sawPending} outcomes waiting for the store at once; after freeing: ${counts.running} running without a worker, ${lost.length} lost`;
}

/**
 * The tests submit their jobs as one burst: on a busy machine the event-loop rule of load shedding
 * refused some of them (429 "this tenant submits 151.6 jobs/s against its share of 12.7 jobs/s drained",
 * 2-core VM at load 12), which is shedding, tested elsewhere, not the full disk tested here.
 */
const NO_SHEDDING = { ...DEFAULT_CONFIG.shed, enabled: false };

void test(
  'disk full on a real tmpfs, then freed: no job stays running, none is lost',
  { timeout: 120_000 },
  async (tc: TestContext) => {
    const fs = mountTmpfs(64);
    if (typeof fs === 'string') {
      tc.skip(fs);
      return;
    }
    const t = await testService(
      { maxRunningJobs: 4, outcomeRetryMs: 120_000, shed: NO_SHEDDING },
      undefined,
      join(fs.dir, 'data'),
      await registry(),
    );
    try {
      const acknowledged = await submitMany(t, JOBS, JOB_MS);
      assert.ok(t.svc.dispatcher.queue.size > 0, 'jobs still queued when the disk fills');
      const filler = fillDisk(fs.dir);
      tc.diagnostic(await fullThenFreed(t, acknowledged, () => rmSync(filler), false));
    } finally {
      await t.close().catch(() => undefined);
      fs.unmount();
    }
  },
);

void test(
  'SQLite refuses to grow (max_page_count), then may again: no job stays running, none is lost',
  { timeout: 120_000 },
  async (tc: TestContext) => {
    const t = await testService(
      { maxRunningJobs: 4, outcomeRetryMs: 120_000, shed: NO_SHEDDING },
      undefined,
      undefined,
      await registry(),
    );
    try {
      const acknowledged = await submitMany(t, JOBS, JOB_MS);
      assert.ok(t.svc.dispatcher.queue.size > 0, 'jobs still queued when the store fills');
      // The database may not grow past its size now: writes that need a page more fail with SQLITE_FULL.
      const pages = t.svc.db.pragma('page_count', { simple: true }) as number;
      t.svc.db.pragma(`max_page_count = ${pages}`);
      tc.diagnostic(
        await fullThenFreed(t, acknowledged, () => void t.svc.db.pragma('max_page_count = 1073741823')),
      );
    } finally {
      await t.close();
    }
  },
);

void test(
  'an outcome that alone does not fit is committed as failed after outcomeRetryMs',
  { timeout: 60_000 },
  async (tc: TestContext) => {
    const fs = mountTmpfs(16);
    if (typeof fs === 'string') {
      tc.skip(fs);
      return;
    }
    // A job whose 8 MiB result goes to a file, on a disk with ~1 MiB left: the result cannot be
    // stored, but the small "failed" record can.
    const dataDir = join(fs.dir, 'data');
    mkdirSync(dataDir, { recursive: true });
    const t = await testService(
      { maxRunningJobs: 1, outcomeRetryMs: 500 },
      undefined,
      dataDir,
      await registry(),
    );
    try {
      execFileSync('truncate', ['-s', '-1M', fillDisk(fs.dir)]);
      const res = await t.svc.app.inject({
        method: 'POST',
        url: '/v1/jobs',
        headers: t.auth(),
        payload: { type: 'big-result', params: {} },
      });
      assert.equal(res.statusCode, 202, res.body);
      const id = (res.json() as { id: string }).id;
      assert.ok(
        await until(() => t.svc.store.get(id)?.state === 'failed', 20_000),
        t.svc.store.get(id)?.state,
      );
      const job = t.svc.store.get(id)!;
      assert.equal(job.error?.code, 'TANDEM_ERR_UNAVAILABLE');
      assert.match(job.error?.message ?? '', /outcome could not be stored: .*(ENOSPC|no space)/);
      assert.equal(t.svc.dispatcher.runningCount, 0);
      assert.equal((await storeHealth(t))?.pendingOutcomes, 0);
      // The partial result file was removed: it would have held the space the failure record needed.
      assert.deepEqual(
        readdirSync(join(dataDir, 'results')).filter((f) => f.endsWith('.tmp')),
        [],
      );
    } finally {
      await t.close().catch(() => undefined);
      fs.unmount();
    }
  },
);

void test('a progress write the store refuses does not fail the job (progress is advisory)', async () => {
  const t = await testService();
  try {
    t.svc.db.exec(
      `CREATE TRIGGER no_progress BEFORE UPDATE OF progress ON jobs
       WHEN OLD.state = 'running' AND NEW.state = 'running'
       BEGIN SELECT RAISE(ABORT, 'database or disk is full (test)'); END`,
    );
    const res = await t.svc.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: t.auth(),
      payload: { type: 'sleep', params: { ms: 600, steps: 3 } }, // progress every 200 ms
    });
    const id = (res.json() as { id: string }).id;
    assert.ok(
      await until(
        () => t.svc.store.get(id)?.state !== 'running' && t.svc.store.get(id)?.state !== 'queued',
        10_000,
      ),
    );
    assert.equal(t.svc.store.get(id)?.state, 'succeeded', JSON.stringify(t.svc.store.get(id)?.error));
    assert.match((await storeHealth(t))?.lastError ?? '', /progress of job/);
  } finally {
    await t.close();
  }
});

void test('a claim the store refuses leaves the job queued; it runs once the store takes writes', async () => {
  const t = await testService();
  try {
    t.svc.db.exec(
      `CREATE TRIGGER no_claim BEFORE UPDATE OF state ON jobs
       WHEN OLD.state = 'queued' AND NEW.state = 'running'
       BEGIN SELECT RAISE(ABORT, 'database or disk is full (test)'); END`,
    );
    const res = await t.svc.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: t.auth(),
      payload: { type: 'sleep', params: { ms: 1 } },
    });
    assert.equal(res.statusCode, 202, res.body);
    const id = (res.json() as { id: string }).id;
    assert.ok(
      await until(async () => /claiming a job/.test((await storeHealth(t))?.lastError ?? ''), 5000),
      'the refused claim is reported',
    );
    assert.equal(t.svc.store.get(id)?.state, 'queued');
    assert.equal(t.svc.dispatcher.queue.size, 1, 'still queued in memory, to be tried again');
    t.svc.db.exec('DROP TRIGGER no_claim');
    assert.ok(
      await until(() => t.svc.store.get(id)?.state === 'succeeded', 10_000),
      t.svc.store.get(id)?.state,
    );
    assert.equal((await storeHealth(t))?.state, 'ok');
  } finally {
    await t.close();
  }
});
