/** The trace exporter writes Chrome Trace Event JSON that Perfetto accepts. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TraceRecorder, type TraceEvent } from '../../src/obs/trace.js';
import { cpuRuntime, randomValues } from './helpers.js';

test('trace: one track per queue, one complete event per task, valid fields', async () => {
  const rt = await cpuRuntime();
  const rec = new TraceRecorder();
  rt.addObserver(rec);
  try {
    const n = 64;
    const a = rt.tensor([n, n], 'f32', randomValues(n * n, 1));
    const b = rt.tensor([n, n], 'f32', randomValues(n * n, 2));
    const c = rt.tensor([n, n], 'f32');
    for (let i = 0; i < 10; i++)
      rt.submit({ kernel: 'gemm', args: { a, b, c }, name: `gemm-${i}`, tags: { job: 'j1' } });
    await rt.idle();
  } finally {
    await rt.close();
  }
  const json = JSON.parse(JSON.stringify(rec.toJSON())) as { traceEvents: TraceEvent[] };
  assert.ok(Array.isArray(json.traceEvents));
  const tasks = json.traceEvents.filter((e) => e.ph === 'X' && e.cat === 'task');
  assert.equal(tasks.length, 10);
  for (const e of tasks) {
    assert.equal(typeof e.ts, 'number');
    assert.ok(Number.isFinite(e.ts) && e.dur! >= 0, 'ts and dur are finite');
    assert.equal(typeof e.pid, 'number');
    assert.equal(typeof e.tid, 'number');
    assert.equal(e.args?.['job'], 'j1');
    assert.equal(e.args?.['op'], 'gemm');
  }
  const names = json.traceEvents
    .filter((e) => e.ph === 'M' && e.name === 'thread_name')
    .map((e) => e.args?.['name']);
  assert.ok(
    names.every((n) => typeof n === 'string' && /^cpu0\.w\d$/.test(n as string)),
    `tracks: ${names.join(', ')}`,
  );
  // Events on one track must not overlap: an in-order queue runs one task at a time.
  const byTrack = new Map<number, TraceEvent[]>();
  for (const e of tasks) byTrack.set(e.tid, [...(byTrack.get(e.tid) ?? []), e]);
  for (const evs of byTrack.values()) {
    evs.sort((x, y) => x.ts - y.ts);
    for (let i = 1; i < evs.length; i++)
      assert.ok(evs[i]!.ts >= evs[i - 1]!.ts + evs[i - 1]!.dur! - 1, 'no overlap on a queue track');
  }
});
