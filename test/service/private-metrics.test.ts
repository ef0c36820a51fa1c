/**
 * Private by default (issue 19, finding 5): `/metrics` carries tenant names (queue depth, running jobs),
 * so it needs an admin key on the API port, or a separate keyless listener the operator binds to a
 * private address; `/v1/stats` shows a tenant only its own queue, an admin every tenant's.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { loadServiceConfig } from '../../src/service/config.js';
import { startServer } from '../../src/service/server.js';
import { createTenant, tempDir, testService, type TestService } from './helpers.js';

interface Stats {
  queued: number;
  running: number;
  queue: { tenant: string; priority: number; queued: number }[];
}

/** alice and bob each with queued jobs behind one running slot. */
async function busyService(): Promise<{ t: TestService; alice: string; bob: string }> {
  const t = await testService({ maxRunningJobs: 1 });
  const alice = await createTenant(t, 'alice');
  const bob = await createTenant(t, 'bob');
  for (const [key, n] of [
    [alice, 3],
    [bob, 2],
  ] as const)
    for (let i = 0; i < n; i++) {
      const res = await t.svc.app.inject({
        method: 'POST',
        url: '/v1/jobs',
        headers: t.auth(key),
        payload: { type: 'sleep', params: { ms: 60_000 } },
      });
      assert.equal(res.statusCode, 202, res.body);
    }
  // The one slot is taken by one of them; the rest stay queued.
  for (let i = 0; i < 200 && t.svc.dispatcher.runningCount === 0; i++)
    await new Promise((r) => setTimeout(r, 5));
  return { t, alice, bob };
}

void test('/metrics needs an admin key; its tenant labels reach admins only', async () => {
  const { t, alice } = await busyService();
  try {
    const none = await t.svc.app.inject({ url: '/metrics' });
    assert.equal(none.statusCode, 401, none.body);
    assert.ok(!none.body.includes('alice'));
    const user = await t.svc.app.inject({ url: '/metrics', headers: t.auth(alice) });
    assert.equal(user.statusCode, 403, user.body);
    assert.equal((user.json() as { error: { code: string } }).error.code, 'TANDEM_ERR_FORBIDDEN');
    assert.ok(!user.body.includes('bob'));
    const admin = await t.svc.app.inject({ url: '/metrics', headers: t.auth() });
    assert.equal(admin.statusCode, 200);
    assert.match(admin.body, /tandem_queue_depth\{tenant="alice",priority="0"\} \d/);
    assert.match(admin.body, /tandem_queue_depth\{tenant="bob",priority="0"\} \d/);
    // The API document says so too (no `security: []` on /metrics, as on the public /healthz).
    const doc = (await t.svc.app.inject({ url: '/openapi.json' })).json() as {
      paths: Record<string, { get: { security?: unknown[] } }>;
    };
    assert.equal(doc.paths['/metrics']?.get.security, undefined);
    assert.deepEqual(doc.paths['/healthz']?.get.security, []);
  } finally {
    await t.close();
  }
});

void test('/v1/stats: a tenant sees its own queue and counts, an admin every tenant’s', async () => {
  const { t, alice, bob } = await busyService();
  try {
    const get = async (key: string): Promise<Stats> =>
      (await t.svc.app.inject({ url: '/v1/stats', headers: t.auth(key) })).json() as Stats;
    const all = await get(t.admin);
    assert.deepEqual(new Set(all.queue.map((q) => q.tenant)), new Set(['alice', 'bob']));
    assert.equal(all.queued, 4);
    assert.equal(all.running, 1);
    for (const [key, name, jobs] of [
      [alice, 'alice', 3],
      [bob, 'bob', 2],
    ] as const) {
      const own = await get(key);
      assert.deepEqual(
        own.queue.map((q) => q.tenant),
        own.queue.length ? [name] : [],
        `${name} sees only itself`,
      );
      assert.equal(own.queued + own.running, jobs, `${name}'s own counts`);
      assert.equal(
        own.queued,
        own.queue.reduce((a, q) => a + q.queued, 0),
      );
    }
  } finally {
    await t.close();
  }
});

void test('the separate metrics listener serves /metrics without a key, and nothing else', async () => {
  const dir = tempDir();
  const config = loadServiceConfig(
    { TANDEM_METRICS_ADDR: '127.0.0.1:0' },
    {
      dataDir: dir,
      port: 0,
      logLevel: 'silent',
      durability: 'normal',
      runtime: { enabled: false, backends: [], cpuThreads: 1, calibrate: false, cacheDir: dir },
    },
  );
  const server = await startServer(config, () => undefined);
  try {
    assert.ok(server.metricsUrl, 'the listener is up');
    const m = await fetch(server.metricsUrl);
    assert.equal(m.status, 200);
    assert.match(await m.text(), /tandem_jobs_submitted_total|tandem_process_/);
    const other = await fetch(server.metricsUrl.replace('/metrics', '/v1/jobs'));
    assert.equal(other.status, 404);
    await other.text();
    // The API port still keeps it private.
    const api = await fetch(`${server.url}/metrics`);
    assert.equal(api.status, 401);
    await api.text();
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

void test('a metrics address that is not host:port is a configuration error', () => {
  for (const bad of ['nope', 'host:', 'h:99999', 'a b:1'])
    assert.throws(
      () => loadServiceConfig({ TANDEM_METRICS_ADDR: bad }, { dataDir: '/tmp/x' }),
      /TANDEM_ERR_CONFIG/,
      bad,
    );
  assert.equal(loadServiceConfig({ TANDEM_METRICS_ADDR: ':9464' }, {}).metricsListen, ':9464');
});
