/**
 * Failure isolation of the group commit (issue 19, finding 1): submissions of one event-loop turn share
 * one SQLite transaction, and one submission whose insert fails must fail alone — every other tenant's
 * submission in that group is stored and answered 202.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import type { LightMyRequestResponse } from 'fastify';
import { Submitter } from '../../src/service/runner/submitter.js';
import { openDatabase } from '../../src/service/store/db.js';
import { JobStore } from '../../src/service/store/job-store.js';
import {
  cpuTestService,
  createTenant,
  tempDir,
  testService,
  waitForJob,
  type TestService,
} from './helpers.js';

const OTHER_TENANTS = 20;
const OTHERS_PER_TENANT = 50;

/** Many tenants' submits and one poisoned one, all sent before the submitter's group commit runs. */
async function submitInOneTurn(
  t: TestService,
  keys: readonly string[],
  poisoned: { key: string; payload: object; url?: string },
): Promise<{ others: LightMyRequestResponse[]; poisoned: LightMyRequestResponse; groups: number }> {
  const groupsBefore = t.svc.submitter.groups;
  const others: Promise<LightMyRequestResponse>[] = [];
  let bad: Promise<LightMyRequestResponse> | null = null;
  for (let i = 0; i < keys.length * OTHERS_PER_TENANT; i++) {
    // The poisoned one in the middle of the group, with others before and after it.
    if (i === (keys.length * OTHERS_PER_TENANT) >> 2)
      bad = t.svc.app.inject({
        method: 'POST',
        url: poisoned.url ?? '/v1/jobs',
        headers: t.auth(poisoned.key),
        payload: poisoned.payload,
      });
    const waited = i % 10 === 0; // some of them ?wait jobs, which reserve room at the group commit
    others.push(
      t.svc.app.inject({
        method: 'POST',
        url: waited ? '/v1/jobs?wait=5' : '/v1/jobs',
        headers: t.auth(keys[i % keys.length]),
        payload: { type: 'sleep', params: { ms: 0 } },
      }),
    );
  }
  const [answers, poisonedAnswer] = await Promise.all([Promise.all(others), bad!]);
  return { others: answers, poisoned: poisonedAnswer, groups: t.svc.submitter.groups - groupsBefore };
}

async function tenants(t: TestService, n: number): Promise<string[]> {
  const keys: string[] = [];
  for (let i = 0; i < n; i++) keys.push(await createTenant(t, `tenant${i}`));
  return keys;
}

function assertOthersStored(t: TestService, others: readonly LightMyRequestResponse[]): void {
  const failed = others.filter((r) => r.statusCode !== 202 && r.statusCode !== 200);
  assert.equal(
    failed.length,
    0,
    `${failed.length} of ${others.length} other tenants' submits failed, e.g. ${failed[0]?.body ?? ''}`,
  );
  for (const r of others) assert.ok(t.svc.store.get((r.json() as { id: string }).id), 'stored');
}

void test('an md job with a cells array among 1,000 other tenants’ submits: nobody fails', async () => {
  const t = await testService({ rateLimitPerSec: 1e6, rateLimitBurst: 1e6, maxRunningJobs: 4 });
  try {
    const keys = await tenants(t, OTHER_TENANTS);
    const mdKey = await createTenant(t, 'md-user');
    const { others, poisoned, groups } = await submitInOneTurn(t, keys, {
      key: mdKey,
      payload: { type: 'md', params: { cells: [8, 8, 8] } },
    });
    // The point of the test: the md job shared a group commit with others (512 jobs a group at most).
    assert.ok(groups <= 3, `${groups} group commits for ${others.length + 1} submits`);
    assert.equal(poisoned.statusCode, 202, poisoned.body);
    const md = poisoned.json() as { id: string; memoryBytes: number };
    assert.equal(md.memoryBytes, 128 * 4 * 8 * 8 * 8, 'estimated from the validated cells');
    assertOthersStored(t, others);
  } finally {
    await t.close();
  }
});

void test('one insert that fails in SQLite fails only its own submit, not its group', async () => {
  const t = await testService({ rateLimitPerSec: 1e6, rateLimitBurst: 1e6, maxRunningJobs: 4 });
  try {
    const keys = await tenants(t, OTHER_TENANTS);
    const badKey = await createTenant(t, 'poisoned');
    const badId = t.svc.tenants.byName('poisoned')!.id;
    // Any failure of one row's insert (a constraint, a trigger, a bad value) stands for all of them.
    t.svc.db.exec(
      `CREATE TRIGGER poison BEFORE INSERT ON jobs WHEN NEW.tenant_id = '${badId}'
       BEGIN SELECT RAISE(ABORT, 'poisoned row'); END`,
    );
    const { others, poisoned, groups } = await submitInOneTurn(t, keys, {
      key: badKey,
      // A ?wait submit reserves room at the group commit: its failed insert must give the room back.
      url: '/v1/jobs?wait=5',
      payload: { type: 'sleep', params: { ms: 0 } },
    });
    assert.ok(groups <= 3, `${groups} group commits for ${others.length + 1} submits`);
    assert.equal(poisoned.statusCode, 503, poisoned.body);
    const err = (poisoned.json() as { error: { code: string; message: string } }).error;
    assert.equal(err.code, 'TANDEM_ERR_UNAVAILABLE');
    assert.match(err.message, /poisoned row/);
    assertOthersStored(t, others);
    assert.equal(t.svc.store.list({ tenantId: badId, limit: 10 }).length, 0, 'nothing half-stored');
    // Every accepted job runs to its end and no room stays held (a leaked reservation would).
    const deadline = Date.now() + 30_000;
    while (t.svc.dispatcher.queue.size + t.svc.dispatcher.runningCount > 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 10));
    assert.equal(t.svc.dispatcher.queue.size + t.svc.dispatcher.runningCount, 0, 'all accepted jobs ran');
    assert.equal(t.svc.dispatcher.runningByTenant().size, 0, 'no room held');
    assert.equal(t.svc.store.countsByState().succeeded, others.length);
  } finally {
    await t.close();
  }
});

void test(
  'an md job with a cells array runs to its end on the CPU runtime',
  { timeout: 120_000 },
  async (t) => {
    const s = await cpuTestService(t, {});
    if (!s) return;
    try {
      const res = await s.svc.app.inject({
        method: 'POST',
        url: '/v1/jobs',
        headers: s.auth(),
        payload: { type: 'md', params: { cells: [4, 4, 5], steps: 10, thermoEvery: 5 } },
      });
      assert.equal(res.statusCode, 202, res.body);
      const done = await waitForJob(s, (res.json() as { id: string }).id, s.admin, 100_000);
      assert.equal(done.state, 'succeeded', JSON.stringify(done.error));
      const out = await s.svc.app.inject({ url: `/v1/jobs/${done.id}/result`, headers: s.auth() });
      assert.equal((out.json() as { result: { atoms: number } }).result.atoms, 4 * 4 * 4 * 5);
    } finally {
      await s.close();
    }
  },
);

void test('a hand-off that throws for one job of a group neither skips nor strands the others', async () => {
  const dir = tempDir();
  const db = openDatabase(dir, 'normal');
  try {
    const store = new JobStore(db);
    const handed: string[] = [];
    const errors: string[] = [];
    const submitter = new Submitter(
      store,
      (job) => {
        if (job.tenantId === 'bad') throw new Error('enqueue failed');
        handed.push(job.tenantId);
      },
      undefined,
      undefined,
      (e, id) => errors.push(`${id ?? '?'}: ${e instanceof Error ? e.message : String(e)}`),
    );
    const job = (tenantId: string) => ({
      tenantId,
      type: 'sleep',
      params: {},
      priority: 0,
      jobClass: 'latency',
      memBytes: 0,
      idempotencyKey: null,
    });
    const outcomes = Promise.all(['a', 'bad', 'c', 'd'].map((t) => submitter.submit(job(t))));
    const answered = await Promise.race([
      outcomes,
      new Promise<null>((r) => setTimeout(() => r(null), 2000).unref()),
    ]);
    assert.ok(answered, 'every submission of the group is answered');
    assert.deepEqual(
      answered.map((o) => o.ok),
      [true, true, true, true],
    );
    assert.deepEqual(handed, ['a', 'c', 'd']);
    assert.equal(errors.length, 1);
    assert.match(errors[0]!, /enqueue failed/);
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
