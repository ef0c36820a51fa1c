/**
 * GET /v1/jobs as the dashboard's jobs list uses it: filters by state, type and (admins only) tenant,
 * pages through the cursor (`next` → ?before=) without gaps or repeats, and (?total=true) a `total` of
 * the matching jobs; the device a job's tasks actually ran on replaces its placement target once it has run.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, testService, waitForJob, type JobJson } from './helpers.js';

interface Page {
  jobs: (JobJson & { type: string; tenant: string; device: string | null })[];
  next: string | null;
  total: number;
  totalExact: boolean;
}

void test('jobs list: state, type and tenant filters, cursor paging, total', async () => {
  const t = await testService({ maxRunningJobs: 1 });
  try {
    const alice = await createTenant(t, 'alice');
    const bob = await createTenant(t, 'bob');
    const submit = async (key: string, type: string, params: object): Promise<string> => {
      const r = await t.svc.app.inject({
        method: 'POST',
        url: '/v1/jobs',
        headers: t.auth(key),
        payload: { type, params },
      });
      assert.equal(r.statusCode, 202, r.body);
      return (r.json() as JobJson).id;
    };
    const aliceGemm: string[] = [];
    for (let i = 0; i < 5; i++) aliceGemm.push(await submit(alice, 'gemm', { n: 8 }));
    const aliceSleep = [await submit(alice, 'sleep', { ms: 1 }), await submit(alice, 'sleep', { ms: 1 })];
    const bobGemm = [await submit(bob, 'gemm', { n: 8 }), await submit(bob, 'gemm', { n: 8 })];
    for (const id of [...aliceGemm, ...aliceSleep, ...bobGemm]) await waitForJob(t, id);
    // One cancelled: a sleep held long enough to cancel while queued behind another.
    const blocker = await submit(alice, 'sleep', { ms: 3000 });
    const victim = await submit(alice, 'sleep', { ms: 1 });
    const c = await t.svc.app.inject({
      method: 'POST',
      url: `/v1/jobs/${victim}/cancel`,
      headers: t.auth(alice),
    });
    assert.equal((c.json() as { outcome: string }).outcome, 'cancelled');
    await t.svc.app.inject({ method: 'POST', url: `/v1/jobs/${blocker}/cancel`, headers: t.auth(alice) });
    await waitForJob(t, blocker);

    const list = async (query: string, key = t.admin): Promise<Page> => {
      const r = await t.svc.app.inject({ url: `/v1/jobs?${query}&total=true`, headers: t.auth(key) });
      assert.equal(r.statusCode, 200, r.body);
      return r.json() as Page;
    };
    // type
    const gemms = await list('type=gemm');
    assert.equal(gemms.total, 7);
    assert.ok(gemms.totalExact);
    assert.ok(gemms.jobs.every((j) => j.type === 'gemm'));
    // type + tenant (admin)
    const aliceGemms = await list('type=gemm&tenant=alice');
    assert.deepEqual(aliceGemms.jobs.map((j) => j.id).sort(), [...aliceGemm].sort());
    assert.equal(aliceGemms.total, 5);
    // state
    const cancelled = await list('state=cancelled');
    assert.deepEqual(cancelled.jobs.map((j) => j.id).sort(), [blocker, victim].sort());
    assert.ok(cancelled.jobs.every((j) => j.state === 'cancelled'));
    assert.equal((await list('state=cancelled&type=gemm')).total, 0);
    // A tenant's own list ignores ?tenant= (it sees only its own jobs).
    const bobOwn = await list('tenant=alice', bob);
    assert.deepEqual(bobOwn.jobs.map((j) => j.id).sort(), [...bobGemm].sort());
    assert.equal(bobOwn.total, 2);
    // Paging: 2 per page through alice's 9 jobs, newest first, each exactly once, same total on each page.
    const seen: string[] = [];
    let query = 'tenant=alice&limit=2';
    for (let pages = 0; pages < 10; pages++) {
      const page = await list(query);
      assert.equal(page.total, 9);
      assert.ok(page.jobs.length <= 2);
      seen.push(...page.jobs.map((j) => j.id));
      if (!page.next) break;
      query = `tenant=alice&limit=2&before=${page.next}`;
    }
    const expected = [...aliceGemm, ...aliceSleep, blocker, victim].reverse();
    assert.deepEqual(seen, expected);
    // Without ?total=true nothing is counted (a poll stays cheap).
    const plain = (await t.svc.app.inject({ url: '/v1/jobs?type=gemm', headers: t.auth() })).json() as Page;
    assert.equal(plain.jobs.length, 7);
    assert.equal(plain.total, undefined);
    // The filters are validated.
    const bad = await t.svc.app.inject({ url: '/v1/jobs?type=Not%20A%20Type', headers: t.auth() });
    assert.equal(bad.statusCode, 400);
    assert.equal((bad.json() as { error: { code: string } }).error.code, 'TANDEM_ERR_INVALID_ARGUMENT');
    // The device: where the gemm's tasks ran (the test runtime's cpu0), not the placement target.
    const placedOn = gemms.jobs.map((j) => j.device);
    // A job that ran no task ran on no device (its placement target, 'cpu', is not one).
    const sleeps = await list('type=sleep&state=succeeded');
    assert.ok(
      sleeps.jobs.length > 0 && sleeps.jobs.every((j) => j.device === null),
      JSON.stringify(sleeps.jobs.map((j) => j.device)),
    );
    assert.ok(
      placedOn.every((d) => d === 'cpu0'),
      `devices ${JSON.stringify(placedOn)}`,
    );
  } finally {
    await t.close();
  }
});

void test('jobs list: the total is counted up to a cap', async () => {
  const t = await testService();
  try {
    for (let i = 0; i < 3; i++)
      await t.svc.app.inject({
        method: 'POST',
        url: '/v1/jobs',
        headers: t.auth(),
        payload: { type: 'sleep', params: { ms: 1 } },
      });
    assert.deepEqual(t.svc.store.count({ tenantId: null }, 2), { total: 2, exact: false });
    assert.deepEqual(t.svc.store.count({ tenantId: null }, 3), { total: 3, exact: false });
    assert.deepEqual(t.svc.store.count({ tenantId: null }, 4), { total: 3, exact: true });
    assert.deepEqual(t.svc.store.count({ tenantId: null, type: 'gemm' }), { total: 0, exact: true });
  } finally {
    await t.close();
  }
});
