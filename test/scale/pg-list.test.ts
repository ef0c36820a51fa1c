/**
 * The PostgreSQL job store lists and counts as the SQLite one does (the jobs list's filters, cursor and
 * total work whichever store is behind the API): type, state and tenant filters, the seq cursor, and a
 * count capped at `cap`. Skips with the reason when PostgreSQL is not installed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { PgJobStore } from '../../src/service/store/pg-store.js';
import type { NewJob } from '../../src/service/store/job-store.js';
import { startPostgres, type Server } from './harness.js';

const p = await startPostgres();
const skip = p.ok ? false : p.reason;
if (skip) console.log(`# skip pg list tests: ${skip}`);

describe('PgJobStore list and count', { skip }, () => {
  let pgs: Server;
  let store: PgJobStore;
  before(async () => {
    if (!p.ok) return;
    pgs = p.server;
    store = await PgJobStore.open(pgs.url);
  });
  after(async () => {
    await store?.close();
    await pgs?.stop();
  });

  it('filters by type and tenant, pages by seq, counts up to a cap', async () => {
    const job = (tenantId: string, type: string): NewJob => ({
      tenantId,
      type,
      params: {},
      priority: 0,
      jobClass: 'batch',
      memBytes: 0,
      idempotencyKey: null,
    });
    const made = await store.insertMany([
      job('a', 'gemm'),
      job('a', 'sleep'),
      job('b', 'gemm'),
      job('a', 'gemm'),
      job('b', 'sleep'),
    ]);
    const ids = made.map((o) => (o.ok ? o.job.id : ''));
    const gemm = await store.list({ tenantId: null, type: 'gemm', limit: 10 });
    assert.deepEqual(
      gemm.map((j) => j.id),
      [ids[3], ids[2], ids[0]],
    );
    const aGemm = await store.list({ tenantId: 'a', type: 'gemm', limit: 1 });
    assert.deepEqual(
      aGemm.map((j) => j.id),
      [ids[3]],
    );
    const next = await store.list({ tenantId: 'a', type: 'gemm', limit: 1, beforeSeq: aGemm[0]!.seq });
    assert.deepEqual(
      next.map((j) => j.id),
      [ids[0]],
    );
    assert.deepEqual(await store.count({ tenantId: null, type: 'gemm' }), { total: 3, exact: true });
    assert.deepEqual(await store.count({ tenantId: 'b' }), { total: 2, exact: true });
    assert.deepEqual(await store.count({ tenantId: null }, 4), { total: 4, exact: false });
    assert.deepEqual(await store.count({ tenantId: null, state: 'running' }), { total: 0, exact: true });
  });
});
