/** The progress bar: drawn only on a terminal without --json, only forward, always stopped. */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import {
  createProgress,
  progressWanted,
  reportTo,
  taskProgress,
  withProgress,
  workloadProgress,
} from '../../src/cli/progress.js';

/** A stream that looks like a terminal (or not) and keeps what is written. */
function fakeStream(isTTY: boolean): Writable & { isTTY: boolean; columns: number; text: () => string } {
  let text = '';
  const s = new Writable({
    write(chunk: Buffer, _enc, cb) {
      text += chunk.toString();
      cb();
    },
  });
  return Object.assign(s, {
    isTTY,
    columns: 120,
    text: () => text,
    // cli-progress moves the cursor through these on a terminal.
    cursorTo: () => true,
    clearLine: () => true,
    moveCursor: () => true,
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

void test('a bar is drawn on a terminal and goes only forward', async () => {
  const stream = fakeStream(true);
  const p = createProgress('option', { json: false, stream, stdoutIsTTY: true });
  p.update(0.5, 'half');
  await sleep(150);
  assert.match(stream.text(), /option \[.*\] 50% \| .* \| half/);
  p.update(0.25, 'back');
  await sleep(150);
  assert.doesNotMatch(stream.text(), /25%|back/, 'a smaller fraction is ignored');
  p.update(1);
  p.stop();
  assert.match(stream.text(), /100%/);
  // No terminal mode a Ctrl-C (which ends the process without a stop) would leave changed.
  assert.ok(!stream.text().includes('\x1b[?25l'), 'the cursor is never hidden');
  assert.ok(!stream.text().includes('\x1b[?7l'), 'line wrapping is never turned off');
});

void test('no bar with --json, on a pipe, or when stdout is not a terminal', async () => {
  for (const [json, tty, stdoutTty] of [
    [true, true, true],
    [false, false, true],
    [false, true, false],
  ] as const) {
    const stream = fakeStream(tty);
    assert.equal(progressWanted({ json, stream, stdoutIsTTY: stdoutTty }), false);
    const p = createProgress('md', { json, stream, stdoutIsTTY: stdoutTty });
    p.update(0.5, 'x');
    p.stop();
    await sleep(50);
    assert.equal(stream.text(), '', `json=${json} tty=${tty} stdout tty=${stdoutTty}`);
  }
  assert.equal(progressWanted({ json: false, stream: fakeStream(true), stdoutIsTTY: true }), true);
});

void test('withProgress stops the bar when the work fails (no redraw timer left behind)', async () => {
  const stream = fakeStream(true);
  await assert.rejects(
    withProgress('md', { json: false, stream, stdoutIsTTY: true }, async (p) => {
      p.update(0.3);
      await sleep(120);
      throw new Error('boom');
    }),
    /boom/,
  );
  const after = stream.text().length;
  await sleep(300);
  assert.equal(stream.text().length, after, 'nothing drawn after the stop');
});

void test('taskProgress: finished tasks over finished + pending', () => {
  const seen: number[] = [];
  let pending = 3;
  const obs = taskProgress(() => pending, { update: (f) => seen.push(f), stop: () => undefined });
  for (const left of [2, 1, 0]) {
    pending = left;
    obs.onTaskEnd!({} as never);
  }
  assert.deepEqual(seen, [1 / 3, 2 / 3, 1]);
});

void test('reportTo takes the bar away on reaching 1, before the caller prints its result', async () => {
  const stream = fakeStream(true);
  const p = createProgress('bench gemm', { json: false, stream, stdoutIsTTY: true });
  const report = reportTo(p);
  report(0.5, 'round 2 of 4');
  report(1, 'checking');
  const atEnd = stream.text().length;
  report(1, 'again');
  await sleep(250);
  assert.equal(stream.text().length, atEnd, 'stopped: no redraw after 1');
  p.stop(); // a second stop (withProgress's) is harmless
});

void test('workloadProgress: the task estimate until the workload reports its own count, then only that', () => {
  const seen: [number, string | undefined][] = [];
  let pending = 3;
  const wp = workloadProgress(() => pending, { update: (f, l) => seen.push([f, l]), stop: () => undefined });
  pending = 2;
  wp.observer.onTaskEnd!({} as never);
  wp.onProgress(1, 10, 'task');
  pending = 0;
  wp.observer.onTaskEnd!({} as never); // windowed: the estimate would say 100%; ignored now
  wp.onProgress(2, 10, 'task');
  assert.deepEqual(seen, [
    [1 / 3, '1 tasks done'],
    [0.1, '1/10 tasks'],
    [0.2, '2/10 tasks'],
  ]);
});
