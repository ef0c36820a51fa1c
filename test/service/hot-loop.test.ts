/**
 * The lane's hot loop (serving/hot-loop.ts): off by default it does nothing; on, a touch keeps the event
 * loop polling for the window (the loop is busy, not asleep: event-loop utilisation near 1) and lets it
 * sleep once the window has passed with no touch; a touch while hot extends the window.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HotLoop } from '../../src/service/serving/hot-loop.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

void test('hot loop: off does nothing; on keeps the loop polling for the window, then stops', async () => {
  const off = new HotLoop(0);
  off.touch();
  assert.equal(off.hot, false);
  await sleep(5);
  assert.equal(off.polls, 0);

  const hot = new HotLoop(40_000);
  const before = performance.eventLoopUtilization();
  hot.touch();
  assert.equal(hot.hot, true);
  await sleep(25);
  const during = performance.eventLoopUtilization(before);
  assert.ok(hot.hot, 'still hot within the window');
  assert.ok(hot.polls > 20, `only ${hot.polls} polls in 25 ms`);
  assert.ok(during.utilization > 0.5, `event-loop utilisation ${during.utilization.toFixed(2)} while hot`);
  // A touch now extends the window past the first one's end (40 ms after the first touch).
  hot.touch();
  await sleep(25);
  assert.ok(hot.hot, 'a touch while hot extends the window');
  await sleep(60);
  assert.equal(hot.hot, false, 'stops after the window');
  const polls = hot.polls;
  const idle = performance.eventLoopUtilization();
  await sleep(30);
  assert.equal(hot.polls, polls, 'no polls once stopped');
  assert.ok(performance.eventLoopUtilization(idle).utilization < 0.5, 'the loop sleeps again');
});
