import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { TaskEvent } from '../../src/obs/observer.js';
import { seededRandom } from '../../src/core/seeded-random.js';
import { DeviceActivity } from '../../src/service/obs/device-activity.js';

/** The definition: clip every span to the window, sort, merge, sum. */
function reference(spans: readonly [number, number][], from: number, now: number, windowUs: number): number {
  const clipped = spans.map(([a, b]): [number, number] => [Math.max(a, from), Math.min(b, now)]);
  clipped.sort((x, y) => x[0] - y[0]);
  let busy = 0;
  let curA = -Infinity;
  let curB = -Infinity;
  for (const [a, b] of clipped) {
    if (b <= a) continue;
    if (a > curB) {
      if (curB > curA) busy += curB - curA;
      curA = a;
      curB = b;
    } else curB = Math.max(curB, b);
  }
  if (curB > curA) busy += curB - curA;
  return Math.min(1, busy / windowUs);
}

const event = (taskId: number, startUs: number, endUs: number): TaskEvent => ({
  taskId,
  name: 't',
  op: 't',
  deviceId: 'd0',
  queueId: 'q0',
  submitUs: startUs,
  readyUs: startUs,
  startUs,
  endUs,
  ok: true,
  flops: 0,
  bytes: 0,
});

void test('device utilization: busy intervals merged as tasks end match sorting them all', () => {
  const rand = seededRandom(7);
  const windowUs = 50_000;
  const act = new DeviceActivity(windowUs);
  const finished: [number, number][] = [];
  const inflight = new Map<number, number>();
  let now = 0;
  for (let id = 1; id <= 5000; id++) {
    now += rand() * 40;
    // Several queues: tasks overlap and end out of order, some start before earlier ones ended.
    const start = now - rand() * 300;
    if (rand() < 0.1) {
      inflight.set(id, start);
      act.onTaskStart(event(id, start, 0));
    } else {
      const end = Math.min(now, start + rand() * 500);
      finished.push([start, end]);
      act.onTaskEnd(event(id, start, end));
    }
    for (const [tid, s] of inflight)
      if (rand() < 0.05) {
        inflight.delete(tid);
        finished.push([s, now]);
        act.onTaskEnd(event(tid, s, now));
      }
    if (id % 97 === 0) {
      const spans = [...finished, ...[...inflight.values()].map((s): [number, number] => [s, now])];
      const want = reference(spans, now - windowUs, now, windowUs);
      const got = act.utilization('d0', now, 0);
      assert.ok(Math.abs(got - want) < 1e-9, `at ${now.toFixed(1)}: ${got} vs ${want}`);
    }
  }
});
