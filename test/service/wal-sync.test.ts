/**
 * Group commits made durable off the event loop (store/wal-sync.ts): with full durability the submit
 * group and the dispatcher's turn commit without a sync on the main thread, and nothing is answered,
 * started or announced until an fdatasync of the WAL on the thread pool has covered that commit.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { openDatabase } from '../../src/service/store/db.js';
import { JobStore } from '../../src/service/store/job-store.js';
import { WalSync, type SyncCallback } from '../../src/service/store/wal-sync.js';
import { tempDir, testService, type TestService } from './helpers.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

void test('WalSync: callers that arrive while a sync runs share the next one; errors reach them', async () => {
  const dir = tempDir();
  try {
    const path = join(dir, 'x-wal');
    writeFileSync(path, 'frames');
    const sync = new WalSync(path);
    const order: string[] = [];
    const all = Promise.all(
      ['a', 'b', 'c'].map(
        (name) =>
          new Promise<void>((res) => sync.after((e) => (order.push(`${name}:${e?.message ?? 'ok'}`), res()))),
      ),
    );
    assert.deepEqual(order, [], 'never called back synchronously');
    await all;
    assert.deepEqual(order, ['a:ok', 'b:ok', 'c:ok']);
    assert.equal(sync.syncs, 2, 'a alone (it started the first), then b and c together');
    const missing = new WalSync(join(dir, 'none-wal'));
    const err = await new Promise<Error | null>((res) => missing.after(res));
    assert.match(err?.message ?? '', /ENOENT/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Holds every sync's callbacks until `release()` (the disk is slow), counting the syncs asked for. */
function stallSyncs(t: TestService): { release(): void; asked(): number } {
  const walSync = t.svc.store.walSync;
  assert.ok(walSync, 'full durability: group commits sync through WalSync');
  const held: SyncCallback[] = [];
  let stalled = true;
  const after = walSync.after.bind(walSync);
  walSync.after = (cb) => after((e) => (stalled ? held.push(() => cb(e)) : cb(e)));
  return {
    release: () => {
      stalled = false;
      for (const cb of held.splice(0)) cb(null);
    },
    asked: () => held.length,
  };
}

void test('full durability: a submit is answered, and its job queued, only once its group is synced', async () => {
  const t = await testService({ durability: 'full' });
  try {
    const stall = stallSyncs(t);
    let answer: LightMyRequestResponse | null = null;
    const pending = t.svc.app
      .inject({
        method: 'POST',
        url: '/v1/jobs',
        headers: t.auth(),
        payload: { type: 'sleep', params: { ms: 1 } },
      })
      .then((r) => (answer = r));
    for (let i = 0; i < 100 && stall.asked() === 0; i++) await sleep(5);
    assert.equal(stall.asked(), 1, 'the group committed and waits for its sync');
    await sleep(50);
    assert.equal(answer, null, 'not answered before the sync');
    assert.equal(t.svc.dispatcher.runningCount + t.svc.dispatcher.queue.size, 0, 'nor started or queued');
    assert.equal(t.svc.submitter.pending, 1, 'counted as pending (queue quotas, shedding)');
    const health = (await t.svc.app.inject({ url: '/healthz' })).json() as { queued: number };
    assert.equal(health.queued, 1, '/healthz counts it queued, as the database has it');
    stall.release();
    await pending;
    assert.equal(answer!.statusCode, 202, answer!.body);
  } finally {
    await t.close();
  }
});

void test('full durability: a claimed job runs, and an outcome is announced, only once its turn is synced', async () => {
  const t = await testService({ durability: 'full', maxRunningJobs: 1 });
  try {
    const submit = async (ms: number): Promise<string> => {
      const res = await t.svc.app.inject({
        method: 'POST',
        url: '/v1/jobs',
        headers: t.auth(),
        payload: { type: 'sleep', params: { ms } },
      });
      assert.equal(res.statusCode, 202, res.body);
      return (res.json() as { id: string }).id;
    };
    const first = await submit(150); // runs (inserted running), holding the one slot
    const second = await submit(1); // queued behind it
    const announced: string[] = [];
    t.svc.dispatcher.onJobFinished((id) => announced.push(id));
    const stall = stallSyncs(t);
    // The first ends: its finish and the second's claim are committed in one turn, then wait.
    for (let i = 0; i < 200 && t.svc.store.get(second)?.state !== 'running'; i++) await sleep(5);
    assert.equal(t.svc.store.get(first)?.state, 'succeeded', 'committed in the database');
    assert.equal(t.svc.store.get(second)?.state, 'running', 'claimed in the same turn');
    await sleep(50);
    assert.deepEqual(announced, [], 'the outcome is not announced before the sync');
    assert.equal(t.svc.dispatcher.live(second), undefined, 'the claimed job does not run before it');
    // Counted running meanwhile: the first until its outcome is on disk, the second as claimed.
    const health = (await t.svc.app.inject({ url: '/healthz' })).json() as { running: number };
    assert.equal(health.running, 2);
    // A cancel in that window is kept for the run.
    const cancel = await t.svc.app.inject({
      method: 'POST',
      url: `/v1/jobs/${second}/cancel`,
      headers: t.auth(),
    });
    assert.equal(cancel.statusCode, 200, cancel.body);
    assert.equal((cancel.json() as { outcome: string }).outcome, 'cancelling');
    stall.release();
    for (let i = 0; i < 200 && announced.length < 2; i++) await sleep(5);
    assert.deepEqual(announced, [first, second]);
    assert.equal(t.svc.store.get(second)?.state, 'cancelled');
  } finally {
    await t.close();
  }
});

void test('a deferred commit runs with synchronous = NORMAL and leaves FULL behind, also when it throws', () => {
  const dir = tempDir();
  const db = openDatabase(dir, 'full');
  try {
    const store = new JobStore(db);
    const level = (): unknown => db.pragma('synchronous', { simple: true });
    assert.equal(level(), 2, 'full durability: FULL');
    let inside: unknown = null;
    store.inOneCommit(() => (inside = level()), 'deferred');
    assert.deepEqual([inside, level()], [1, 2], 'NORMAL inside the deferred commit, FULL after');
    assert.throws(() => store.inOneCommit(() => assert.fail('the turn fails'), 'deferred'), /the turn fails/);
    assert.equal(level(), 2, 'FULL again after a commit that threw');
    store.inOneCommit(() => (inside = level()), 'now');
    assert.equal(inside, 2, 'a commit synced now keeps FULL');
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
