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
import { closeSync, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
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

async function submitMany(t: TestService, n: number, ms: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await t.svc.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: t.auth(),
      payload: { type: 'sleep', params: { ms } },
    });
    assert.equal(res.statusCode, 202, res.body);
    ids.push((res.json() as { id: string }).id);
  }
  return ids;
}

async function storeHealth(t: TestService): Promise<StoreHealthView> {
  const res = await t.svc.app.inject({ url: '/healthz' });
  assert.equal(res.statusCode, 200);
  return (res.json() as { store: StoreHealthView }).store;
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
async function fullThenFreed(t: TestService, acknowledged: string[], free: () => void): Promise<string> {
  let sawPending = 0;
  const degraded = await until(async () => {
    const h = await storeHealth(t);
    sawPending = Math.max(sawPending, h.pendingOutcomes);
    return h.state === 'degraded' && sawPending > 0;
  }, 20_000);
  const h = await storeHealth(t);
  assert.ok(degraded, `the store did not report a failed finish commit: ${JSON.stringify(h)}`);
  assert.match(h.lastError ?? '', /full/i);
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
  assert.ok(drained, `after freeing: ${JSON.stringify(counts)}, ${t.svc.dispatcher.runningCount} in memory`);
  // The figure: 0 jobs running without a worker, 0 acknowledged jobs lost (each one ended as it ran).
  assert.equal(counts.running, 0);
  for (const id of acknowledged) assert.equal(t.svc.store.get(id)?.state, 'succeeded', id);
  assert.ok(await until(async () => (await storeHealth(t)).state === 'ok', 5000), 'store ok again');
  const lost = acknowledged.filter((id) => t.svc.store.get(id)?.state !== 'succeeded').length;
  return `${acknowledged.length} acknowledged jobs, up to ${sawPending} outcomes waiting for the store at once; after freeing: ${counts.running} running without a worker, ${lost} lost`;
}

void test(
  'disk full on a real tmpfs, then freed: no job stays running, none is lost',
  { timeout: 120_000 },
  async (tc: TestContext) => {
    const fs = mountTmpfs(16);
    if (typeof fs === 'string') {
      tc.skip(fs);
      return;
    }
    const t = await testService(
      { maxRunningJobs: 4, outcomeRetryMs: 120_000 },
      undefined,
      join(fs.dir, 'data'),
    );
    try {
      const acknowledged = await submitMany(t, 1500, 10);
      await new Promise((r) => setTimeout(r, 200));
      const filler = fillDisk(fs.dir);
      tc.diagnostic(await fullThenFreed(t, acknowledged, () => rmSync(filler)));
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
    const t = await testService({ maxRunningJobs: 4, outcomeRetryMs: 120_000 });
    try {
      const acknowledged = await submitMany(t, 1500, 10);
      await new Promise((r) => setTimeout(r, 200));
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
    const registry = new JobTypeRegistry();
    await registerBuiltinJobTypes(registry);
    registry.register(
      defineJobType<Record<string, never>>({
        name: 'big-result',
        description: 'returns 8 MiB',
        paramsSchema: { type: 'object' },
        parse: () => ({}),
        memoryBytes: () => 0,
        jobClass: () => 'batch',
        run: async () => ({ blob: 'x'.repeat(8 << 20) }),
      }),
    );
    const dataDir = join(fs.dir, 'data');
    mkdirSync(dataDir, { recursive: true });
    const t = await testService({ maxRunningJobs: 1, outcomeRetryMs: 500 }, undefined, dataDir, registry);
    try {
      const filler = fillDisk(fs.dir);
      rmSync(filler);
      // Leave ~1 MiB: refill and give back one block.
      const again = fillDisk(fs.dir);
      execFileSync('truncate', ['-s', '-1M', again]);
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
      assert.equal((await storeHealth(t)).pendingOutcomes, 0);
    } finally {
      await t.close().catch(() => undefined);
      fs.unmount();
    }
  },
);
