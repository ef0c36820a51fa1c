import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testService, type JobJson } from './helpers.js';

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
  } finally {
    await t.close();
  }
});

void test('submit ?wait gives up after the wait and answers with the job as it stands', async () => {
  const t = await testService();
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
    // A failed job ends the wait too, without a result.
    const bad = await t.svc.app.inject({
      method: 'POST',
      url: `/v1/jobs/${job.id}/cancel`,
      headers: t.auth(),
    });
    assert.equal(bad.statusCode, 200, bad.body);
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
