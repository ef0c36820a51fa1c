/**
 * Cancellation points in the workloads (issue 19, finding 2) on the real CPU runtime: a huge option,
 * var or md run stops within 100 ms + one task of its signal firing (it drains what is in flight, frees,
 * and throws the abort's reason), and the windowed submission that makes this possible computes what the
 * all-at-once submission does.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { isTandemError, TandemError } from '../../src/core/errors.js';
import type { Observer, TaskEvent } from '../../src/obs/observer.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { runMd } from '../../src/workloads/md/run.js';
import { EXAMPLE_PORTFOLIO } from '../../src/workloads/risk/params.js';
import { portfolioVar, priceOption } from '../../src/workloads/risk/run.js';

let rt: Runtime;
/** Task durations (ms) seen since the last reset, and tasks still running. */
const seen: number[] = [];
const observer: Observer = {
  onTaskEnd: (e: TaskEvent) => void seen.push((e.endUs - e.startUs) / 1000),
};

before(async () => {
  rt = await Runtime.create({ backends: ['cpu'], calibrate: false, options: { cpu: { threads: 1 } } });
  rt.addObserver(observer);
});

after(async () => {
  await rt.close();
});

const used = (): number => rt.memoryUsage().reduce((s, m) => s + m.usedBytes, 0);

/**
 * Starts `run(signal)`, aborts it after `afterMs` with a deadline error, and returns how long the stop
 * took and the longest task that ran.
 */
async function stopTiming(
  run: (signal: AbortSignal) => Promise<unknown>,
  afterMs: number,
): Promise<{ stopMs: number; longestTaskMs: number; error: unknown }> {
  seen.length = 0;
  const ac = new AbortController();
  const p = run(ac.signal);
  // Stopped mid-run: after `afterMs` and at least two finished tasks (the first pays for warm-up).
  const start = performance.now();
  while (seen.length < 2 || performance.now() - start < afterMs) await new Promise((r) => setTimeout(r, 5));
  const t0 = performance.now();
  ac.abort(new TandemError('TANDEM_ERR_DEADLINE_EXCEEDED', 'test deadline'));
  let error: unknown = null;
  try {
    await p;
  } catch (e) {
    error = e;
  }
  const stopMs = performance.now() - t0;
  return { stopMs, longestTaskMs: Math.max(...seen), error };
}

for (const [name, run] of [
  [
    'option of 2^40 paths',
    (s: AbortSignal) => priceOption(rt, { paths: 2 ** 40, device: 'cpu' }, { signal: s }),
  ],
  [
    'asian option of 2^40 paths',
    (s: AbortSignal) => priceOption(rt, { type: 'asian', paths: 2 ** 40, device: 'cpu' }, { signal: s }),
  ],
  [
    'var of 2^24 scenarios',
    (s: AbortSignal) =>
      portfolioVar(rt, { portfolio: EXAMPLE_PORTFOLIO, scenarios: 2 ** 24, device: 'cpu' }, { signal: s }),
  ],
  [
    'md of 10^9 steps',
    (s: AbortSignal) => runMd(rt, { cells: 8, steps: 1e9, thermoEvery: 1e9, device: 'cpu' }, { signal: s }),
  ],
] as const) {
  void test(`a ${name} stops within 100 ms + one task of its signal`, { timeout: 60_000 }, async () => {
    const usedBefore = used();
    const { stopMs, longestTaskMs, error } = await stopTiming(run, 300);
    console.log(
      `${name}: stopped ${stopMs.toFixed(1)} ms after the abort; longest task ${longestTaskMs.toFixed(1)} ms`,
    );
    assert.ok(isTandemError(error, 'TANDEM_ERR_DEADLINE_EXCEEDED'), `threw ${String(error)}`);
    assert.ok(stopMs <= 100 + longestTaskMs, `${stopMs} ms > 100 ms + ${longestTaskMs} ms`);
    // Everything it made is freed (a drained stop leaves no tensor behind).
    assert.equal(used(), usedBefore);
  });
}

void test('an option cut into more tasks than the window prices as before', async () => {
  // 2^23 paths on one CPU worker: 256 tasks of 2^12 streams (2^14 path steps), two at a time.
  const p = { paths: 2 ** 23, device: 'cpu' as const, seed: 7 };
  const res = await priceOption(rt, p);
  assert.equal(res.tasks, 256);
  assert.deepEqual(res.devices, { [rt.devices[0]!.info.id]: 256 });
  const bs = res.analytic!;
  assert.ok(Math.abs(res.price - bs) < 4 * res.stdError, `${res.price} vs ${bs} ± ${res.stdError}`);
});

void test('a var run submitted a window at a time equals the same split submitted at once', async () => {
  const wide = await Runtime.create({
    backends: ['cpu'],
    calibrate: false,
    options: { cpu: { threads: 4 } },
  });
  try {
    const p = { portfolio: EXAMPLE_PORTFOLIO, scenarios: 2 ** 14, device: 'cpu' as const, seed: 11 };
    const windowed = await portfolioVar(rt, p); // 4 tasks on 1 worker: two at a time
    const atOnce = await portfolioVar(wide, p); // 4 tasks on 4 workers: all at once
    assert.equal(windowed.tasks, 4);
    assert.equal(atOnce.tasks, 4);
    assert.equal(windowed.valueAtRisk, atOnce.valueAtRisk);
    assert.equal(windowed.expectedShortfall, atOnce.expectedShortfall);
  } finally {
    await wide.close();
  }
});

void test('a signal already aborted runs nothing', async () => {
  const ac = new AbortController();
  ac.abort();
  seen.length = 0;
  await assert.rejects(priceOption(rt, { paths: 1000 }, { signal: ac.signal }), (e: unknown) =>
    isTandemError(e, 'TANDEM_ERR_CANCELLED'),
  );
  await assert.rejects(runMd(rt, { cells: 4, steps: 10 }, { signal: ac.signal }), (e: unknown) =>
    isTandemError(e, 'TANDEM_ERR_CANCELLED'),
  );
  assert.equal(seen.length, 0);
});
