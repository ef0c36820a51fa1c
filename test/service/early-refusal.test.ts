/**
 * While the service is shedding, a refused `POST /v1/jobs` is answered before Fastify routes it
 * (http/load-shedding.ts, installEarlyRefusal): over a real socket, the same 429
 * TANDEM_ERR_OVERLOADED with Retry-After as the route's hook gives, without reaching Fastify (no
 * request-duration sample for the route); a tenant under its share still goes through to a 202, and a
 * request without a valid key still gets Fastify's 401.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_CONFIG } from '../../src/service/config.js';
import { createTenant, testService } from './helpers.js';

const BUDGET = 20;

void test('a refused submission is answered before routing, with the same 429; others pass through', async () => {
  const t = await testService({
    maxRunningJobs: 1,
    shed: { ...DEFAULT_CONFIG.shed, enabled: true, minBacklog: BUDGET, maxBacklog: BUDGET },
  });
  try {
    const flood = await createTenant(t, 'flood');
    const calm = await createTenant(t, 'calm');
    const job = { type: 'sleep', params: { ms: 10_000 } };
    // Through inject (Fastify's own path): the flood fills the budget, then is refused by the hook.
    let hookRefusal: {
      body: { error: { code: string; message: string; details: Record<string, unknown> } };
      retry: string;
      type: string;
    } | null = null;
    for (let i = 0; i < BUDGET + 5; i++) {
      const res = await t.svc.app.inject({
        method: 'POST',
        url: '/v1/jobs',
        headers: t.auth(flood),
        payload: job,
      });
      if (res.statusCode === 429)
        hookRefusal ??= {
          body: res.json(),
          retry: res.headers['retry-after'] as string,
          type: res.headers['content-type'] as string,
        };
    }
    assert.ok(hookRefusal, 'the hook refused the flood');
    assert.equal(t.svc.shedder.refusingNow, true);

    const url = await t.svc.app.listen({ host: '127.0.0.1', port: 0 });
    const routeSamples = async () =>
      (await t.svc.metrics.httpDuration.get()).values
        .filter((v) => v.metricName?.endsWith('_count') && v.labels['route'] === '/v1/jobs')
        .reduce((n, v) => n + v.value, 0);
    const before = await routeSamples();
    const post = (key: string | null) =>
      fetch(`${url}/v1/jobs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(key ? t.auth(key) : {}) },
        body: JSON.stringify(job),
      });
    const early = await post(flood);
    assert.equal(early.status, 429);
    assert.equal(early.headers.get('retry-after'), hookRefusal.retry);
    assert.equal(early.headers.get('content-type'), hookRefusal.type);
    const body = (await early.json()) as {
      error: { code: string; message: string; details: Record<string, unknown> };
    };
    // The same body as the hook's (the queue's counts in it may have moved by one request).
    assert.deepEqual(Object.keys(body), ['error']);
    assert.deepEqual(Object.keys(body.error), Object.keys(hookRefusal.body.error));
    assert.equal(body.error.code, 'TANDEM_ERR_OVERLOADED');
    assert.deepEqual(Object.keys(body.error.details), Object.keys(hookRefusal.body.error.details));
    assert.equal(body.error.details['reason'], hookRefusal.body.error.details['reason']);
    assert.equal(String(body.error.details['retryAfterSeconds']), hookRefusal.retry);
    assert.ok(!body.error.message.startsWith('TANDEM_ERR_'), body.error.message);
    assert.equal(
      body.error.message.replace(/\d+/g, 'N'),
      hookRefusal.body.error.message.replace(/\d+/g, 'N'),
    );
    assert.equal(await routeSamples(), before, 'answered before Fastify: no route sample');

    // The calm tenant is under its share: through Fastify to a 202. No key: Fastify's 401.
    const ok = await post(calm);
    assert.equal(ok.status, 202);
    await ok.arrayBuffer();
    const noKey = await post(null);
    assert.equal(noKey.status, 401);
    await noKey.arrayBuffer();
    assert.equal(await routeSamples(), before + 2);
  } finally {
    await t.close();
  }
});
