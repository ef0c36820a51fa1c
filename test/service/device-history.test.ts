/**
 * The device history: a ring of samples that keeps the newest `capacity`, answers `since` with only the
 * later ones, shows a device absent from a sample as a gap (null), and is served, authenticated, by
 * GET /v1/devices/history from the service's own timer (device utilization and queue depth from real
 * task events of the test runtime).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DeviceHistory, type DeviceSample } from '../../src/service/obs/device-history.js';
import { fakeRuntime } from './fake-runtime.js';
import { cpuTestService, testService, waitForJob } from './helpers.js';

const dev = (id: string, utilization: number, memoryUsed: number, inflight: number): DeviceSample => ({
  id,
  kind: 'cpu',
  name: `test ${id}`,
  memoryBytes: 1000,
  utilization,
  memoryUsed,
  inflight,
});

void test('history: keeps the newest samples, oldest first, as columns', () => {
  const h = new DeviceHistory(1000, 4);
  for (let i = 0; i < 6; i++)
    h.record(1000 * (i + 1), { devices: [dev('d0', i / 10, i * 100, i)], queued: i, running: 1 });
  const all = h.read();
  assert.deepEqual(all.t, [3000, 4000, 5000, 6000]);
  assert.deepEqual(all.queued, [2, 3, 4, 5]);
  assert.equal(all.devices.length, 1);
  assert.deepEqual(all.devices[0]!.utilization, [0.2, 0.3, 0.4, 0.5]);
  assert.deepEqual(all.devices[0]!.memoryUsed, [200, 300, 400, 500]);
  assert.deepEqual(all.devices[0]!.inflight, [2, 3, 4, 5]);
  assert.equal(all.devices[0]!.memoryBytes, 1000);
  // since: strictly later samples only (an incremental poll passes the last time it has).
  assert.deepEqual(h.read(4000).t, [5000, 6000]);
  assert.deepEqual(h.read(4000).devices[0]!.inflight, [4, 5]);
  assert.deepEqual(h.read(6000).t, []);
  assert.deepEqual(h.read(0).t, [3000, 4000, 5000, 6000]);
});

void test('history: a device missing from a sample (not open yet, or lost) is a gap', () => {
  const h = new DeviceHistory(1000, 8);
  h.record(1, { devices: [dev('a', 0.5, 1, 0)], queued: 0, running: 0 });
  h.record(2, { devices: [dev('a', 0.25, 2, 1), dev('b', 1, 3, 2)], queued: 0, running: 0 });
  h.record(3, { devices: [dev('b', 0.75, 4, 3)], queued: 0, running: 0 });
  const r = h.read();
  const a = r.devices.find((d) => d.id === 'a')!;
  const b = r.devices.find((d) => d.id === 'b')!;
  assert.deepEqual(a.utilization, [0.5, 0.25, null]);
  assert.deepEqual(b.utilization, [null, 1, 0.75]);
  assert.deepEqual(b.memoryUsed, [null, 3, 4]);
});

void test('history: a slot rewritten after the ring wrapped belongs to its new sample only', () => {
  const h = new DeviceHistory(1000, 2);
  h.record(1, { devices: [dev('a', 0.5, 1, 0)], queued: 0, running: 0 });
  h.record(2, { devices: [dev('a', 0.5, 1, 0)], queued: 0, running: 0 });
  h.record(3, { devices: [], queued: 0, running: 0 }); // overwrites slot 0, where 'a' was
  assert.deepEqual(h.read().devices[0]!.utilization, [0.5, null]);
});

void test('GET /v1/devices/history: authenticated, fed by the service timer, since filters', async () => {
  const rt = fakeRuntime({ taskDelayMs: 400 });
  const t = await testService({ historyIntervalMs: 50 }, rt);
  try {
    const anon = await t.svc.app.inject({ url: '/v1/devices/history' });
    assert.equal(anon.statusCode, 401);
    const bad = await t.svc.app.inject({ url: '/v1/devices/history?since=yesterday', headers: t.auth() });
    assert.equal(bad.statusCode, 400);
    const sub = await t.svc.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: t.auth(),
      payload: { type: 'gemm', params: { n: 32, panels: 2 } },
    });
    assert.equal(sub.statusCode, 202, sub.body);
    const id = (sub.json() as { id: string }).id;
    // While its tasks run (400 ms each), samples see the job running and the device busy with tasks.
    await new Promise((r) => setTimeout(r, 300));
    await waitForJob(t, id);
    await new Promise((r) => setTimeout(r, 120));
    interface Answer {
      intervalMs: number;
      t: number[];
      running: number[];
      devices: { id: string; utilization: (number | null)[]; inflight: (number | null)[] }[];
    }
    const res = await t.svc.app.inject({ url: '/v1/devices/history', headers: t.auth() });
    assert.equal(res.statusCode, 200);
    const h = res.json() as Answer;
    assert.equal(h.intervalMs, 50);
    assert.ok(h.t.length >= 5, `only ${h.t.length} samples`);
    for (let i = 1; i < h.t.length; i++) assert.ok(h.t[i]! >= h.t[i - 1]!);
    const cpu = h.devices.find((d) => d.id === 'cpu0');
    assert.ok(cpu, 'cpu0 in the history');
    assert.equal(cpu.utilization.length, h.t.length);
    assert.ok(Math.max(...h.running) >= 1, 'a sample saw the job running');
    // null only before the runtime was attached (the first sample is taken as the service starts).
    const open = cpu.utilization.findIndex((u) => u !== null);
    assert.ok(open >= 0 && open <= 1, `first sample with cpu0: ${open}`);
    assert.ok(cpu.utilization.slice(open).every((u) => u !== null && u >= 0 && u <= 1));
    const since = h.t[h.t.length - 3]!;
    const later = (
      await t.svc.app.inject({ url: `/v1/devices/history?since=${since}`, headers: t.auth() })
    ).json() as Answer;
    assert.ok(later.t.length >= 2 && later.t.every((x) => x > since));
  } finally {
    await t.close();
  }
});

void test(
  'history on the real CPU runtime: a running gemm shows as utilization and tasks on cpu0',
  { timeout: 120_000 },
  async (t) => {
    const s = await cpuTestService(t, { historyIntervalMs: 20 });
    if (!s) return;
    try {
      const sub = await s.svc.app.inject({
        method: 'POST',
        url: '/v1/jobs',
        headers: s.auth(),
        payload: { type: 'gemm', params: { n: 768, panels: 6, dtype: 'f64' } },
      });
      assert.equal(sub.statusCode, 202, sub.body);
      const job = await waitForJob(s, (sub.json() as { id: string }).id, s.admin, 100_000);
      assert.equal(job.state, 'succeeded');
      const h = (await s.svc.app.inject({ url: '/v1/devices/history', headers: s.auth() })).json() as {
        devices: { id: string; kind: string; utilization: (number | null)[]; inflight: (number | null)[] }[];
      };
      const cpu = h.devices.find((d) => d.kind === 'cpu');
      assert.ok(cpu, 'a cpu device in the history');
      assert.ok(Math.max(...cpu.inflight.map(Number)) >= 1, 'a sample saw a task on the device');
      // Utilization is the busy fraction of a 5 s window: a gemm that takes 40 ms on a fast CPU gives
      // 0.008, so any busy time (values are rounded to 1e-4) is what shows the task was counted.
      const peak = Math.max(...cpu.utilization.map(Number));
      assert.ok(peak > 0, `a sample saw the device busy (peak ${peak})`);
    } finally {
      await s.close();
    }
  },
);
