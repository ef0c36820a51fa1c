/**
 * `GET /healthz` over a socket is answered before Fastify routes it (http/fast-health.ts): no Fastify
 * hook or handler runs for it, its duration is still observed, and anything else (a query string, a
 * HEAD, another path) goes through Fastify as before. In the service, the socket's answer is the
 * route's (status, content type, the same fields).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import Fastify from 'fastify';
import { installFastHealth } from '../../src/service/http/fast-health.js';
import { testService } from './helpers.js';

void test('GET /healthz skips Fastify; everything else still goes through it', async () => {
  const app = Fastify();
  let hooks = 0;
  let routeCalls = 0;
  app.addHook('onRequest', async () => {
    hooks++;
  });
  app.get('/healthz', async () => {
    routeCalls++;
    return { status: 'from-route' };
  });
  app.get('/other', async () => ({ other: true }));
  const observed: number[] = [];
  let status = 200;
  installFastHealth(
    app,
    () => ({ status, body: { status: status === 200 ? 'ok' : 'draining', n: 1 } }),
    (s) => observed.push(s),
  );
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  try {
    const fast = await fetch(`${url}/healthz`);
    assert.equal(fast.status, 200);
    assert.equal(fast.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.deepEqual(await fast.json(), { status: 'ok', n: 1 });
    assert.deepEqual([hooks, routeCalls, observed.length], [0, 0, 1], 'no Fastify hook or handler ran');
    assert.ok(observed[0]! >= 0 && observed[0]! < 1);
    status = 503;
    const draining = await fetch(`${url}/healthz`);
    assert.equal(draining.status, 503);
    assert.deepEqual(await draining.json(), { status: 'draining', n: 1 });
    // Through Fastify: a query string, a HEAD, another path.
    const withQuery = await fetch(`${url}/healthz?verbose=1`);
    assert.deepEqual(await withQuery.json(), { status: 'from-route' });
    const head = await fetch(`${url}/healthz`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    const other = await fetch(`${url}/other`);
    assert.deepEqual(await other.json(), { other: true });
    assert.deepEqual([hooks, routeCalls, observed.length], [3, 2, 2]);
  } finally {
    await app.close();
  }
});

void test("the service's /healthz over a socket answers what its route answers", async () => {
  const t = await testService();
  try {
    const url = await t.svc.app.listen({ host: '127.0.0.1', port: 0 });
    const routed = await t.svc.app.inject({ url: '/healthz' });
    const fast = await fetch(`${url}/healthz`);
    assert.equal(fast.status, routed.statusCode);
    assert.equal(fast.headers.get('content-type'), routed.headers['content-type']);
    const a = (await fast.json()) as Record<string, unknown>;
    const b = routed.json<Record<string, unknown>>();
    assert.deepEqual(Object.keys(a).sort(), Object.keys(b).sort());
    assert.deepEqual({ ...a, uptimeSeconds: 0, load: null }, { ...b, uptimeSeconds: 0, load: null });
    assert.deepEqual(Object.keys(a['load'] as object).sort(), Object.keys(b['load'] as object).sort());
    const samples = (await t.svc.metrics.httpDuration.get()).values.filter(
      (v) => v.metricName?.endsWith('_count') && v.labels['route'] === '/healthz',
    );
    assert.equal(
      samples.reduce((n, v) => n + v.value, 0),
      2,
      'both answers recorded under the route',
    );
  } finally {
    await t.close();
  }
});
