/**
 * An agent's deadline on one attempt (src/agent/attempt-deadline.ts): the signal aborts with
 * TANDEM_ERR_DEADLINE_EXCEEDED at the deadline, a job that ignores it is given up `graceMs` later, a job
 * whose time ran out before the attempt started is failed without running, and a job without a budget
 * is never stopped.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { isTandemError } from '../../src/core/errors.js';
import { AttemptDeadline, expiredAtStart } from '../../src/agent/attempt-deadline.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

void it('aborts the signal at the deadline with TANDEM_ERR_DEADLINE_EXCEEDED', async () => {
  const now = Date.now();
  const stop = new AbortController();
  const d = new AttemptDeadline({ timeoutMs: 50, deadlineAt: now + 50, startedAt: now }, stop, 10_000, now);
  try {
    await sleep(20);
    assert.equal(stop.signal.aborted, false, 'not before the deadline');
    await sleep(80);
    assert.equal(stop.signal.aborted, true);
    assert.ok(isTandemError(stop.signal.reason, 'TANDEM_ERR_DEADLINE_EXCEEDED'));
    assert.ok(isTandemError(d.reason, 'TANDEM_ERR_DEADLINE_EXCEEDED'));
  } finally {
    d.clear();
  }
});

void it('gives up a job that ignores its signal one grace after the deadline', async () => {
  const now = Date.now();
  const d = new AttemptDeadline(
    { timeoutMs: 30, deadlineAt: now + 30, startedAt: now },
    new AbortController(),
    60,
    now,
  );
  const never = new Promise<string>(() => undefined); // a run that does not stop
  const t0 = Date.now();
  const outcome = await Promise.race([never, d.overdue]);
  const waited = Date.now() - t0;
  assert.ok(typeof outcome === 'object' && outcome.state === 'failed');
  assert.equal(outcome.error?.code, 'TANDEM_ERR_DEADLINE_EXCEEDED');
  assert.match(outcome.error?.message ?? '', /did not stop within 60 ms/);
  assert.ok(waited >= 85 && waited < 1000, `given up after ${waited} ms`);
  d.clear();
});

void it('fails at start a job whose deadline has passed, and leaves alone one without a budget', async () => {
  const now = Date.now();
  const expired = expiredAtStart({ timeoutMs: 1000, deadlineAt: now - 1, startedAt: now - 1001 }, now);
  assert.equal(expired?.state, 'failed');
  assert.equal(expired?.error?.code, 'TANDEM_ERR_DEADLINE_EXCEEDED');
  assert.equal(expiredAtStart({ timeoutMs: 1000, deadlineAt: now + 1000, startedAt: now }, now), null);
  const stop = new AbortController();
  const d = new AttemptDeadline({ timeoutMs: null, deadlineAt: null, startedAt: now }, stop, 0, now);
  await sleep(30);
  assert.equal(stop.signal.aborted, false);
  d.clear();
});
