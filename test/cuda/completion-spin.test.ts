/**
 * The completion poller's bounded spin (completion.ts) on the fake driver: a lone batch is waited for
 * right after its launch (its callback runs before the next event-loop turn), a batch that does not
 * finish is let go at the budget, nothing spins with two batches in flight, after work that took longer
 * than the budget, or with a budget of 0; a fault seen while spinning is reported. (On the real GPU:
 * test/gpu/workloads.test.ts and bench/risk-tail.ts run through the same code.)
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { CompletionPoller, ownEventsBelow, spinBudgetUs } from '../../src/devices/cuda/completion.js';
import { FakeGpu } from './fake-driver.js';

const STREAM = 7;

function poller(budgetMs: number, gpu = new FakeGpu()) {
  const faults: number[] = [];
  const p = new CompletionPoller(
    gpu.driver(),
    () => {},
    (rc) => faults.push(rc),
    budgetMs,
  );
  return { p, gpu, faults };
}

/** Lets queued microtasks (the spin) run, without giving the event loop a turn. */
const microtasks = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

void describe('completion poller spin', () => {
  void it('waits for a lone batch before the next event-loop turn', async () => {
    const { p } = poller(1);
    let done = false;
    let turned = false;
    setImmediate(() => (turned = true));
    p.watch(STREAM, (err) => {
      assert.equal(err, null);
      done = true;
    });
    await microtasks();
    assert.equal(done, true);
    assert.equal(turned, false);
    assert.equal(p.stats.spins, 1);
    await nextTurn();
  });

  void it('lets a batch that does not finish go at the budget, then polls it', async () => {
    const { p, gpu } = poller(2);
    gpu.autoComplete = false;
    let done = false;
    const t0 = performance.now();
    p.watch(STREAM, () => (done = true));
    await microtasks();
    const waited = performance.now() - t0;
    assert.equal(p.stats.spins, 1);
    assert.equal(done, false);
    assert.ok(waited >= 1.9 && waited < 50, `spun ${waited} ms for a 2 ms budget`);
    gpu.complete();
    while (!done) await nextTurn();
  });

  void it('does not spin after work that took longer than the budget', async () => {
    const { p, gpu } = poller(1);
    gpu.autoComplete = false;
    let done = 0;
    p.watch(STREAM, () => done++);
    await new Promise((r) => setTimeout(r, 20));
    gpu.complete();
    while (done < 1) await nextTurn();
    const spins = p.stats.spins;
    p.watch(STREAM, () => done++);
    await microtasks();
    assert.equal(p.stats.spins, spins);
    gpu.complete();
    while (done < 2) await nextTurn();
  });

  void it('does not spin with two batches in flight, nor with a budget of 0', async () => {
    const a = poller(1);
    a.gpu.autoComplete = false;
    let done = 0;
    a.p.watch(STREAM, () => done++);
    a.p.watch(STREAM + 1, () => done++);
    await microtasks();
    assert.equal(a.p.stats.spins, 0);
    a.gpu.complete();
    while (done < 2) await nextTurn();

    const b = poller(0);
    b.p.watch(STREAM, () => done++);
    await microtasks();
    assert.equal(b.p.stats.spins, 0);
    while (done < 3) await nextTurn();
  });

  void it('reports a fault seen while spinning', async () => {
    const { p, gpu, faults } = poller(5);
    gpu.autoComplete = false;
    gpu.faultCode = 700;
    p.watch(STREAM, () => {});
    await microtasks();
    assert.deepEqual(faults, [700]);
  });

  void it('reads its budget from TANDEM_CUDA_SPIN_US (default 30 µs; 0 turns it off)', () => {
    assert.equal(spinBudgetUs({}), 30);
    assert.equal(spinBudgetUs({ TANDEM_CUDA_SPIN_US: '0' }), 0);
    assert.equal(spinBudgetUs({ TANDEM_CUDA_SPIN_US: '50' }), 50);
    assert.equal(spinBudgetUs({ TANDEM_CUDA_SPIN_US: 'fast' }), 30);
    assert.equal(spinBudgetUs({ TANDEM_CUDA_SPIN_US: '-1' }), 30);
  });

  void it('records own events below TANDEM_CUDA_OWN_EVENTS outstanding (default 32; 0: shared only)', () => {
    assert.equal(ownEventsBelow({}), 32);
    assert.equal(ownEventsBelow({ TANDEM_CUDA_OWN_EVENTS: '0' }), 0);
    assert.equal(ownEventsBelow({ TANDEM_CUDA_OWN_EVENTS: '4' }), 4);
    assert.equal(ownEventsBelow({ TANDEM_CUDA_OWN_EVENTS: '5000' }), 1024);
    assert.equal(ownEventsBelow({ TANDEM_CUDA_OWN_EVENTS: '2.5' }), 32);
    assert.equal(ownEventsBelow({ TANDEM_CUDA_OWN_EVENTS: 'many' }), 32);
  });
});
