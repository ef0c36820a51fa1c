/** The WAL checkpointer thread (store/checkpointer.ts) with the real SQLite: bounded WAL, clean close. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { WalCheckpointer } from '../../src/service/store/checkpointer.js';
import { openDatabase, type Db } from '../../src/service/store/db.js';
import { JobStore } from '../../src/service/store/job-store.js';
import { tempDir, testService } from './helpers.js';

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

/** A ?wait job's two commits, `n` times, with an event-loop turn after each (the thread runs meanwhile). */
async function runJobs(db: Db, n: number): Promise<void> {
  const store = new JobStore(db);
  for (let k = 0; k < n; k++) {
    const [o] = store.insertMany(
      [
        {
          tenantId: 't',
          type: 'sleep',
          params: { ms: k, pad: 'x'.repeat(3000) }, // ~a page a row, so the WAL grows fast
          priority: 0,
          jobClass: 'latency',
          memBytes: 0,
          idempotencyKey: null,
        },
      ],
      Date.now(),
      [{ device: 'cpu0', placement: null }],
    );
    assert.ok(o?.ok);
    await turn();
    assert.ok(store.finish(o.job.id, 1, { state: 'succeeded', result: { k } }));
    await turn();
  }
}

const walBytes = (dir: string): number => statSync(join(dir, 'tandem.sqlite-wal')).size;
/**
 * What the WAL stays under with the thread: ~1 MiB (restartFrames 200) when it runs freely, a few MiB
 * when a loaded machine holds it back (13.3 MiB once, with two other test suites and a clean-clone CI
 * sharing the 2 cores; 20.5 MiB once in a clean-clone CI alone, its other test files beside it);
 * without checkpoints the same jobs leave ~57 MiB, every time (the same writes, nothing reclaimed).
 */
const BOUND = 26 * 2 ** 20;

void test('checkpointer: the server connection never checkpoints, the thread keeps the WAL bounded', async () => {
  const dir = tempDir();
  const db = openDatabase(dir, 'normal');
  const restartFrames = 200;
  const ckpt = new WalCheckpointer(db, { intervalMs: 2, restartFrames });
  try {
    assert.equal(db.pragma('wal_autocheckpoint', { simple: true }), 0);
    await ckpt.checkpointNow(); // the thread is up (it starts in ~50 ms, more on a loaded machine)
    await runJobs(db, 1500);
    assert.ok(walBytes(dir) < BOUND, `WAL ${walBytes(dir)} bytes`);
    const r = await ckpt.checkpointNow();
    assert.ok(r.walFrames >= 0 && r.copied === r.walFrames, JSON.stringify(r));
    await ckpt.close();
    assert.equal(ckpt.running, false);
    assert.deepEqual(await ckpt.checkpointNow(), { walFrames: -1, copied: -1 });
    assert.equal(db.pragma('wal_autocheckpoint', { simple: true }), 1000, 'checkpoints itself again');
  } finally {
    await ckpt.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

void test('checkpointer: without it the same jobs grow the WAL past that bound (the test above can fail)', async () => {
  const dir = tempDir();
  const db = openDatabase(dir, 'normal');
  try {
    db.pragma('wal_autocheckpoint = 0');
    await runJobs(db, 1500);
    assert.ok(walBytes(dir) > 2 * BOUND, `WAL ${walBytes(dir)} bytes`);
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

void test('checkpointer: service close stops the thread; an unclosed one does not keep a process alive', async () => {
  const t = await testService();
  assert.equal(t.svc.checkpointer.running, true);
  assert.equal(t.svc.db.pragma('wal_autocheckpoint', { simple: true }), 0);
  await t.close();
  assert.equal(t.svc.checkpointer.running, false);

  const dir = tempDir();
  try {
    const mod = new URL('../../src/service/store/', import.meta.url).href;
    const script = `
      const { openDatabase } = await import('${mod}db.js');
      const { WalCheckpointer } = await import('${mod}checkpointer.js');
      const db = openDatabase(${JSON.stringify(dir)}, 'normal');
      const c = new WalCheckpointer(db, { intervalMs: 1 });
      console.log(JSON.stringify(await c.checkpointNow()));`;
    const res = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    assert.equal(res.status, 0, `exit ${res.status} ${res.signal ?? ''} ${res.stderr}`);
    assert.match(res.stdout, /"walFrames":\d+/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

void test('checkpointer: a thread that fails is logged, not thrown, and the connection checkpoints itself again', async () => {
  const dir = tempDir();
  const db = openDatabase(dir, 'normal');
  const logged: string[] = [];
  // The thread opens the file with fileMustExist: gone, it fails at once (as a broken disk would).
  rmSync(dir, { recursive: true, force: true });
  const ckpt = new WalCheckpointer(db, { log: (level, msg) => logged.push(`${level} ${msg}`) });
  try {
    assert.deepEqual(await ckpt.checkpointNow(), { walFrames: -1, copied: -1 });
    while (ckpt.running) await new Promise((r) => setTimeout(r, 10));
    assert.ok(
      logged.some((l) => l.startsWith('error WAL checkpoint thread')),
      logged.join('\n'),
    );
    assert.ok(
      logged.some((l) => l.startsWith('warn') && l.includes('exited')),
      logged.join('\n'),
    );
    assert.equal(db.pragma('wal_autocheckpoint', { simple: true }), 1000);
  } finally {
    await ckpt.close();
    db.close();
  }
});
