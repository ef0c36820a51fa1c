import { test } from 'node:test';
import type { InjectOptions } from 'fastify';
import assert from 'node:assert/strict';
import { createTenant, testService, waitForJob, type JobJson } from './helpers.js';
import { fakeRuntime } from './fake-runtime.js';
import { jobsApiSuite } from './jobs-api-suite.js';

// The same route tests as the scaled-out control plane's (test/scale/control-plane.test.ts).
jobsApiSuite('single node (SQLite)', async () => {
  const t = await testService({ maxRunningJobs: 1 });
  return {
    inject: (req) => t.svc.app.inject(req),
    alice: await createTenant(t, 'alice'),
    bob: await createTenant(t, 'bob'),
    close: () => t.close(),
  };
});

void test('submit a gemm job, watch it finish, read result and trace', async () => {
  const t = await testService();
  try {
    const res = await t.svc.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: t.auth(),
      payload: { type: 'gemm', params: { n: 48, panels: 3 } },
    });
    assert.equal(res.statusCode, 202, res.body);
    const job = res.json() as JobJson;
    assert.match(job.id, /^job_[0-9a-f]{20}$/);
    assert.equal(job.state, 'queued');
    const done = await waitForJob(t, job.id);
    assert.equal(done.state, 'succeeded', JSON.stringify(done.error));
    assert.equal(done.progress, 1);
    const result = (
      await t.svc.app.inject({ url: `/v1/jobs/${job.id}/result`, headers: t.auth() })
    ).json() as {
      result: { n: number; panels: number; check: { ok: boolean; rowsChecked: number; maxRelError: number } };
    };
    assert.equal(result.result.n, 48);
    assert.equal(result.result.panels, 3);
    assert.ok(result.result.check.ok);
    assert.ok(result.result.check.maxRelError < 1e-5);
    const trace = (await t.svc.app.inject({ url: `/v1/jobs/${job.id}/trace`, headers: t.auth() })).json() as {
      traceEvents: { name: string; ph: string; cat: string }[];
    };
    const names = trace.traceEvents.filter((e) => e.ph === 'X').map((e) => e.name);
    for (const want of ['queued', 'placement', 'run gemm', 'result', 'reference check (float64)'])
      assert.ok(names.includes(want), `${want} in ${names.join(',')}`);
    assert.equal(trace.traceEvents.filter((e) => e.cat === 'task').length, 3, 'one kernel span per panel');
    assert.ok(trace.traceEvents.some((e) => e.cat === 'transfer'));
  } finally {
    await t.close();
  }
});

void test('a wrong kernel result fails the job with a clear error', async () => {
  const t = await testService({}, fakeRuntime({ wrongResults: true }));
  try {
    const res = await t.svc.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: t.auth(),
      payload: { type: 'gemm', params: { n: 16 } },
    });
    const done = await waitForJob(t, (res.json() as JobJson).id);
    assert.equal(done.state, 'failed');
    assert.equal(done.error?.code, 'TANDEM_ERR_KERNEL_FAILED');
    const r = await t.svc.app.inject({ url: `/v1/jobs/${done.id}/result`, headers: t.auth() });
    assert.equal(r.statusCode, 409);
  } finally {
    await t.close();
  }
});

void test('tenants are isolated: another tenant sees 404, lists only its own jobs', async () => {
  const t = await testService();
  try {
    const alice = await createTenant(t, 'alice');
    const bob = await createTenant(t, 'bob');
    const res = await t.svc.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: t.auth(alice),
      payload: { type: 'sleep', params: { ms: 1 } },
    });
    const id = (res.json() as JobJson).id;
    for (const url of [`/v1/jobs/${id}`, `/v1/jobs/${id}/result`, `/v1/jobs/${id}/trace`]) {
      const r = await t.svc.app.inject({ url, headers: t.auth(bob) });
      assert.equal(r.statusCode, 404, url);
      assert.equal((r.json() as { error: { code: string } }).error.code, 'TANDEM_ERR_NOT_FOUND');
    }
    const cancel = await t.svc.app.inject({
      method: 'POST',
      url: `/v1/jobs/${id}/cancel`,
      headers: t.auth(bob),
    });
    assert.equal(cancel.statusCode, 404);
    const bobList = (await t.svc.app.inject({ url: '/v1/jobs', headers: t.auth(bob) })).json() as {
      jobs: unknown[];
    };
    assert.equal(bobList.jobs.length, 0);
    const aliceList = (await t.svc.app.inject({ url: '/v1/jobs', headers: t.auth(alice) })).json() as {
      jobs: JobJson[];
    };
    assert.deepEqual(
      aliceList.jobs.map((j) => j.id),
      [id],
    );
    const adminView = await t.svc.app.inject({ url: `/v1/jobs/${id}`, headers: t.auth() });
    assert.equal(adminView.statusCode, 200);
    const forbidden = await t.svc.app.inject({
      method: 'POST',
      url: '/v1/tenants',
      headers: t.auth(bob),
      payload: { name: 'eve' },
    });
    assert.equal(forbidden.statusCode, 403);
  } finally {
    await t.close();
  }
});

void test('bad input: each answer is JSON with a stable code', async () => {
  const t = await testService({ bodyLimitBytes: 4096 });
  try {
    const cases: { name: string; req: InjectOptions; status: number; code: string }[] = [
      { name: 'no key', req: { url: '/v1/jobs' }, status: 401, code: 'TANDEM_ERR_UNAUTHORIZED' },
      {
        name: 'wrong key',
        req: { url: '/v1/jobs', headers: t.auth('tdm_0123456789abcdef_' + 'x'.repeat(32)) },
        status: 401,
        code: 'TANDEM_ERR_UNAUTHORIZED',
      },
      {
        name: 'garbage key',
        req: { url: '/v1/jobs', headers: { 'x-api-key': 'nope' } },
        status: 401,
        code: 'TANDEM_ERR_UNAUTHORIZED',
      },
      {
        name: 'malformed JSON',
        req: {
          method: 'POST',
          url: '/v1/jobs',
          headers: { ...t.auth(), 'content-type': 'application/json' },
          payload: '{"type": "gemm",',
        },
        status: 400,
        code: 'TANDEM_ERR_MALFORMED_REQUEST',
      },
      {
        name: 'not JSON media type',
        req: {
          method: 'POST',
          url: '/v1/jobs',
          headers: { ...t.auth(), 'content-type': 'text/csv' },
          payload: 'a,b',
        },
        status: 400,
        code: 'TANDEM_ERR_MALFORMED_REQUEST',
      },
      {
        name: 'schema: missing type',
        req: { method: 'POST', url: '/v1/jobs', headers: t.auth(), payload: { params: {} } },
        status: 400,
        code: 'TANDEM_ERR_INVALID_ARGUMENT',
      },
      {
        name: 'schema: extra field',
        req: {
          method: 'POST',
          url: '/v1/jobs',
          headers: t.auth(),
          payload: { type: 'gemm', params: { n: 4 }, extra: 1 },
        },
        status: 400,
        code: 'TANDEM_ERR_INVALID_ARGUMENT',
      },
      {
        name: 'schema: string n',
        req: {
          method: 'POST',
          url: '/v1/jobs',
          headers: t.auth(),
          payload: { type: 'gemm', params: { n: '64' } },
        },
        status: 400,
        code: 'TANDEM_ERR_INVALID_ARGUMENT',
      },
      {
        name: 'unknown type',
        req: { method: 'POST', url: '/v1/jobs', headers: t.auth(), payload: { type: 'bitcoin', params: {} } },
        status: 400,
        code: 'TANDEM_ERR_UNKNOWN_JOB_TYPE',
      },
      {
        name: 'size beyond limit',
        req: {
          method: 'POST',
          url: '/v1/jobs',
          headers: t.auth(),
          payload: { type: 'gemm', params: { n: 100000 } },
        },
        status: 400,
        code: 'TANDEM_ERR_INVALID_ARGUMENT',
      },
      {
        name: 'body too large',
        req: {
          method: 'POST',
          url: '/v1/jobs',
          headers: t.auth(),
          payload: { type: 'gemm', params: { n: 4 }, idempotencyKey: 'k'.repeat(8000) },
        },
        status: 413,
        code: 'TANDEM_ERR_PAYLOAD_TOO_LARGE',
      },
      {
        name: 'bad id',
        req: { url: '/v1/jobs/nope', headers: t.auth() },
        status: 400,
        code: 'TANDEM_ERR_INVALID_ARGUMENT',
      },
      {
        name: 'missing job',
        req: { url: '/v1/jobs/job_00000000000000000000', headers: t.auth() },
        status: 404,
        code: 'TANDEM_ERR_NOT_FOUND',
      },
      {
        name: 'unknown route',
        req: { url: '/v1/nothing', headers: t.auth() },
        status: 404,
        code: 'TANDEM_ERR_NOT_FOUND',
      },
      {
        name: 'bad query',
        req: { url: '/v1/jobs?limit=abc', headers: t.auth() },
        status: 400,
        code: 'TANDEM_ERR_INVALID_ARGUMENT',
      },
    ];
    for (const c of cases) {
      const res = await t.svc.app.inject(c.req);
      assert.equal(res.statusCode, c.status, `${c.name}: ${res.body}`);
      const body = res.json() as { error: { code: string; message: string; details: object } };
      assert.equal(body.error.code, c.code, c.name);
      assert.ok(body.error.message.length > 0, c.name);
      assert.equal(typeof body.error.details, 'object', c.name);
    }
  } finally {
    await t.close();
  }
});

void test('rate limit answers 429 with Retry-After; queue quota answers 429 TANDEM_ERR_QUOTA', async () => {
  const t = await testService({ rateLimitPerSec: 1, rateLimitBurst: 3 });
  try {
    const codes: number[] = [];
    for (let i = 0; i < 5; i++)
      codes.push((await t.svc.app.inject({ url: '/v1/whoami', headers: t.auth() })).statusCode);
    assert.deepEqual(codes, [200, 200, 200, 429, 429]);
    const r = await t.svc.app.inject({ url: '/v1/whoami', headers: t.auth() });
    assert.equal((r.json() as { error: { code: string } }).error.code, 'TANDEM_ERR_RATE_LIMITED');
    assert.ok(Number(r.headers['retry-after']) >= 1);
  } finally {
    await t.close();
  }
  const q = await testService({ maxRunningJobs: 1 });
  try {
    const key = await createTenant(q, 'small', { maxQueuedJobs: 2 });
    const submit = () =>
      q.svc.app.inject({
        method: 'POST',
        url: '/v1/jobs',
        headers: q.auth(key),
        payload: { type: 'sleep', params: { ms: 2000 } },
      });
    const statuses = await Promise.all([submit(), submit(), submit(), submit()]);
    const codes = statuses.map((s) => s.statusCode).sort();
    assert.ok(codes.includes(429), codes.join(','));
    const quota = statuses.find((s) => s.statusCode === 429)!;
    assert.equal((quota.json() as { error: { code: string } }).error.code, 'TANDEM_ERR_QUOTA');
  } finally {
    await q.close();
  }
});

void test('idempotency keys return the same job; a different job under the same key is a conflict', async () => {
  const t = await testService();
  try {
    const body = { type: 'sleep', params: { ms: 1 }, idempotencyKey: 'abc-1' };
    const [a, b] = await Promise.all([
      t.svc.app.inject({ method: 'POST', url: '/v1/jobs', headers: t.auth(), payload: body }),
      t.svc.app.inject({ method: 'POST', url: '/v1/jobs', headers: t.auth(), payload: body }),
    ]);
    assert.deepEqual([a.statusCode, b.statusCode].sort(), [200, 202]);
    assert.equal((a.json() as JobJson).id, (b.json() as JobJson).id);
    const viaHeader = await t.svc.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: { ...t.auth(), 'idempotency-key': 'abc-1' },
      payload: { type: 'sleep', params: { ms: 1 } },
    });
    assert.equal((viaHeader.json() as JobJson).id, (a.json() as JobJson).id);
    const clash = await t.svc.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: t.auth(),
      payload: { ...body, params: { ms: 2 } },
    });
    assert.equal(clash.statusCode, 409);
    assert.equal((clash.json() as { error: { code: string } }).error.code, 'TANDEM_ERR_CONFLICT');
  } finally {
    await t.close();
  }
});

void test('cancel: a queued job at once, a running job through its AbortSignal', async () => {
  const t = await testService({ maxRunningJobs: 1 });
  try {
    const submit = async (ms: number) =>
      (
        await t.svc.app.inject({
          method: 'POST',
          url: '/v1/jobs',
          headers: t.auth(),
          payload: { type: 'sleep', params: { ms, steps: 100 } },
        })
      ).json() as JobJson;
    const running = await submit(30_000);
    const queued = await submit(10);
    for (let i = 0; i < 100 && (await waitState(t, running.id)) !== 'running'; i++)
      await new Promise((r) => setTimeout(r, 10));
    const c1 = (
      await t.svc.app.inject({ method: 'POST', url: `/v1/jobs/${queued.id}/cancel`, headers: t.auth() })
    ).json() as { outcome: string; job: JobJson };
    assert.equal(c1.outcome, 'cancelled');
    assert.equal(c1.job.state, 'cancelled');
    const c2 = (
      await t.svc.app.inject({ method: 'POST', url: `/v1/jobs/${running.id}/cancel`, headers: t.auth() })
    ).json() as { outcome: string };
    assert.equal(c2.outcome, 'cancelling');
    const done = await waitForJob(t, running.id, t.admin, 5000);
    assert.equal(done.state, 'cancelled');
    assert.equal(done.error?.code, 'TANDEM_ERR_CANCELLED');
  } finally {
    await t.close();
  }
});

async function waitState(t: Awaited<ReturnType<typeof testService>>, id: string): Promise<string> {
  return ((await t.svc.app.inject({ url: `/v1/jobs/${id}`, headers: t.auth() })).json() as JobJson).state;
}

void test('health, metrics, devices and OpenAPI', async () => {
  const t = await testService();
  try {
    const h = await t.svc.app.inject({ url: '/healthz' });
    assert.equal(h.statusCode, 200);
    assert.equal((h.json() as { status: string }).status, 'ok');
    const sub = await t.svc.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: t.auth(),
      payload: { type: 'gemm', params: { n: 8 } },
    });
    await waitForJob(t, (sub.json() as JobJson).id);
    const m = await t.svc.app.inject({ url: '/metrics', headers: t.auth() });
    assert.match(m.headers['content-type'] as string, /text\/plain/);
    for (const name of [
      'tandem_device_utilization_ratio{device="cpu0"}',
      'tandem_device_memory_total_bytes{device="cpu0"}',
      'tandem_tasks_total{device="cpu0",op="gemm",status="ok"} 1',
      'tandem_job_wait_seconds_bucket',
      'tandem_job_run_seconds_count{type="gemm",state="succeeded"} 1',
      'tandem_transfer_bytes_total',
      'tandem_jobs_submitted_total{type="gemm"} 1',
    ])
      assert.ok(m.body.includes(name), `${name} in /metrics`);
    const d = (await t.svc.app.inject({ url: '/v1/devices', headers: t.auth() })).json() as {
      devices: { id: string; memoryBytes: number }[];
    };
    assert.equal(d.devices[0]?.id, 'cpu0');
    const doc = (await t.svc.app.inject({ url: '/openapi.json' })).json() as {
      openapi: string;
      paths: Record<string, Record<string, unknown>>;
    };
    assert.equal(doc.openapi, '3.1.0');
    for (const p of [
      '/v1/jobs',
      '/v1/jobs/{id}',
      '/v1/jobs/{id}/cancel',
      '/v1/jobs/{id}/result',
      '/v1/jobs/{id}/trace',
      '/v1/devices',
      '/healthz',
      '/metrics',
    ])
      assert.ok(doc.paths[p], `${p} in OpenAPI`);
    assert.ok(doc.paths['/v1/jobs']!['post']);
  } finally {
    await t.close();
  }
});
