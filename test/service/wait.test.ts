import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testService, waitForJob, type JobJson } from './helpers.js';

type Answer = JobJson & { result?: { n: number; check: { ok: boolean } } };

void test('submit ?wait answers once the job has finished, with its inline result', async () => {
  const t = await testService();
  try {
    const t0 = performance.now();
    const res = await t.svc.app.inject({
      method: 'POST',
      url: '/v1/jobs?wait=20',
      headers: t.auth(),
      payload: { type: 'gemm', params: { n: 40, panels: 2 } },
    });
    assert.equal(res.statusCode, 202, res.body);
    const job = res.json() as Answer;
    assert.equal(job.state, 'succeeded', res.body);
    assert.equal(job.result?.n, 40);
    assert.ok(job.result?.check.ok);
    assert.ok(performance.now() - t0 < 20_000);
    // The same answer as the result route.
    const r = (await t.svc.app.inject({ url: `/v1/jobs/${job.id}/result`, headers: t.auth() })).json() as {
      result: unknown;
    };
    assert.deepEqual(r.result, job.result);
    // The answer's record is built in memory at the commit; it is the record the database holds.
    const stored = (
      await t.svc.app.inject({ url: `/v1/jobs/${job.id}`, headers: t.auth() })
    ).json() as Answer;
    const { result: _result, ...answered } = job;
    assert.deepEqual(answered, stored);
  } finally {
    await t.close();
  }
});

void test('submit ?wait gives up after the wait and answers with the job as it stands', async () => {
  const t = await testService({ maxRunningJobs: 1 }); // the second job queues behind the first
  try {
    const t0 = performance.now();
    const res = await t.svc.app.inject({
      method: 'POST',
      url: '/v1/jobs?wait=0.3',
      headers: t.auth(),
      payload: { type: 'sleep', params: { ms: 5000 } },
    });
    const waited = performance.now() - t0;
    assert.equal(res.statusCode, 202, res.body);
    const job = res.json() as Answer;
    assert.ok(job.state === 'queued' || job.state === 'running', job.state);
    assert.equal(job.result, undefined);
    assert.ok(waited >= 290 && waited < 4000, `waited ${waited} ms`);
    // A job that ends any other way ends the wait too, without a result: cancel one, queued behind the
    // first, while it is waited on.
    const t1 = performance.now();
    const waiting = t.svc.app.inject({
      method: 'POST',
      url: '/v1/jobs?wait=20',
      headers: t.auth(),
      payload: { type: 'sleep', params: { ms: 10_000 } },
    });
    let other: JobJson | undefined;
    for (let i = 0; i < 200 && !other; i++) {
      await new Promise((r) => setTimeout(r, 20));
      const list = (await t.svc.app.inject({ url: '/v1/jobs', headers: t.auth() })).json() as {
        jobs: JobJson[];
      };
      other = list.jobs.find((j) => j.id !== job.id);
    }
    assert.ok(other, 'the waited job is listed');
    const cancel = await t.svc.app.inject({
      method: 'POST',
      url: `/v1/jobs/${other.id}/cancel`,
      headers: t.auth(),
    });
    assert.equal(cancel.statusCode, 200, cancel.body);
    const ended = (await waiting).json() as Answer;
    assert.equal(ended.id, other.id);
    assert.equal(ended.state, 'cancelled', JSON.stringify(ended));
    assert.equal(ended.result, undefined);
    assert.ok(performance.now() - t1 < 9000, 'answered at the cancel, not after the sleep or the wait');
  } finally {
    await t.close();
  }
});

void test('submit ?wait outside 0..60 or not a number is a 400 with a stable code', async () => {
  const t = await testService();
  try {
    for (const q of ['wait=-1', 'wait=61', 'wait=60.5', 'wait=soon', 'wait=', 'nope=1']) {
      const res = await t.svc.app.inject({
        method: 'POST',
        url: `/v1/jobs?${q}`,
        headers: t.auth(),
        payload: { type: 'sleep', params: { ms: 1 } },
      });
      assert.equal(res.statusCode, 400, `${q}: ${res.body}`);
      assert.equal((res.json() as { error: { code: string } }).error.code, 'TANDEM_ERR_INVALID_ARGUMENT', q);
    }
  } finally {
    await t.close();
  }
});

void test('submit ?wait starts the job in its insert when there is room, never ahead of queued jobs', async () => {
  const t = await testService({ maxRunningJobs: 1 });
  const post = (wait: string, ms: number) =>
    t.svc.app.inject({
      method: 'POST',
      url: `/v1/jobs${wait}`,
      headers: t.auth(),
      payload: { type: 'sleep', params: { ms } },
    });
  try {
    // Room: inserted running (attempt 1, started when created), one commit for submit and claim.
    const alone = (await post('?wait=20', 5)).json() as Answer;
    assert.equal(alone.state, 'succeeded', JSON.stringify(alone));
    assert.equal(alone.attempt, 1);
    assert.equal(alone.waitSeconds, 0, 'started in the insert');
    // No room: one job runs, one is queued; a waited job queues behind it, as fairness orders them.
    const running = (await post('', 300)).json() as JobJson;
    await waitUntil(t, running.id, 'running');
    const queued = (await post('', 10)).json() as JobJson;
    const waited = (await post('?wait=20', 1)).json() as Answer;
    assert.equal(waited.state, 'succeeded', JSON.stringify(waited));
    const first = (await waitForJob(t, queued.id)) as JobJson & { startedAt: string; finishedAt: string };
    assert.ok(
      Date.parse(String(waited['startedAt'])) >= Date.parse(first.finishedAt),
      'the waited job started after the queued one',
    );
  } finally {
    await t.close();
  }
});

async function waitUntil(t: Awaited<ReturnType<typeof testService>>, id: string, state: string) {
  for (let i = 0; i < 500; i++) {
    const job = (await t.svc.app.inject({ url: `/v1/jobs/${id}`, headers: t.auth() })).json() as JobJson;
    if (job.state === state) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`job ${id} never ${state}`);
}
