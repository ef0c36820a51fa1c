/**
 * The load shedder's decisions on a manual clock: the budget follows the measured drain rate, a tenant
 * over its share is refused with a Retry-After from its backlog and its share of the drain rate, a tenant
 * under its share is never refused for another tenant's flood, and event-loop pressure refuses only the
 * tenant that submits faster than its share drains.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isTandemError } from '../../src/core/errors.js';
import { DEFAULT_CONFIG, loadServiceConfig, type LoadShedConfig } from '../../src/service/config.js';
import { LoadShedder, type QueueSignals } from '../../src/service/runner/load-shedder.js';

class FakeQueue implements QueueSignals {
  readonly queued = new Map<string, number>();
  readonly weights = new Map<string, number>();
  pending = 0;
  backlog(): number {
    let n = this.pending;
    for (const v of this.queued.values()) n += v;
    return n;
  }
  backlogFor(t: string): number {
    return this.queued.get(t) ?? 0;
  }
  pendingCommit(): number {
    return this.pending;
  }
  activeTenants(): Iterable<string> {
    return [...this.queued].filter(([, n]) => n > 0).map(([t]) => t);
  }
  weightOf(t: string): number {
    return this.weights.get(t) ?? 1;
  }
}

const CFG: LoadShedConfig = {
  ...DEFAULT_CONFIG.shed,
  enabled: true,
  targetWaitSeconds: 10,
  minBacklog: 100,
  maxBacklog: 5_000,
  maxLoopDelayMs: 20,
  maxInFlight: 1_000,
};

function setup(cfg: LoadShedConfig = CFG) {
  const q = new FakeQueue();
  let now = 0;
  const shed = new LoadShedder(cfg, q, () => now);
  /** `perSecond` finishes for `seconds`, in 250 ms windows, while `q` holds a backlog. */
  const drain = (perSecond: number, seconds: number): void => {
    for (let w = 0; w < seconds * 4; w++) {
      for (let i = 0; i < perSecond / 4; i++) shed.jobFinished();
      now += 250;
      shed.tick();
    }
  };
  const advance = (ms: number): void => {
    now += ms;
    shed.tick();
  };
  return { q, shed, drain, advance };
}

void describe('load shedder', () => {
  void it('sizes the queued-jobs budget from the measured drain rate × target wait, within its bounds', () => {
    const { q, shed, drain } = setup();
    assert.equal(shed.budget(), 100, 'nothing measured yet: the floor');
    q.queued.set('a', 10);
    drain(200, 3);
    assert.ok(Math.abs(shed.budget() - 2_000) <= 20, `200 jobs/s × 10 s ≈ 2,000, got ${shed.budget()}`);
    drain(2_000, 5);
    assert.equal(shed.budget(), 5_000, 'the ceiling bounds memory');
    // Without a backlog, finishes are only the demand: a slow window does not lower the estimate.
    q.queued.clear();
    drain(10, 2);
    assert.equal(shed.budget(), 5_000);
    // Nor does a queue shorter than what a window drains (the dispatcher ran dry, demand-bound).
    q.queued.set('a', 20);
    drain(400, 2); // 100 a window
    assert.equal(shed.budget(), 5_000);
    // A queue deeper than a window's finishes: the dispatcher was busy all along, so this is capacity.
    q.queued.set('a', 1_000);
    drain(100, 10);
    assert.ok(shed.budget() < 1_100, `slower capacity lowers the budget, got ${shed.budget()}`);
  });

  void it('refuses a tenant over the budget with a Retry-After from its excess and the drain rate', () => {
    const { q, shed, drain } = setup();
    q.queued.set('a', 10);
    drain(100, 3); // budget ≈ 1,000
    const budget = shed.budget();
    q.queued.set('a', budget - 1);
    assert.equal(shed.admit('a'), null, 'under the budget: accepted');
    q.queued.set('a', budget);
    const r = shed.admit('a');
    assert.equal(r?.reason, 'backlog');
    assert.equal(r?.retryAfterSeconds, 1, 'one job over at ~100 jobs/s: 1 s');
    q.queued.set('a', budget + 500);
    const later = shed.admit('a');
    assert.equal(later?.retryAfterSeconds, Math.ceil(501 / 100), '501 jobs over at 100 jobs/s');
    assert.equal(later?.details['budget'], budget);
  });

  void it("never refuses a tenant under its weighted share because of another tenant's flood", () => {
    const { q, shed, drain, advance } = setup();
    q.weights.set('calm', 3);
    q.queued.set('flood', 10);
    drain(100, 3);
    q.queued.set('flood', 10_000); // far over everything
    q.queued.set('calm', 1);
    advance(250); // both are active tenants now: calm's share is 3/4 of the budget
    const budget = shed.budget();
    assert.equal(shed.admit('flood')?.reason, 'backlog');
    q.queued.set('calm', Math.floor(budget * 0.75) - 1);
    assert.equal(shed.admit('calm'), null, 'under its share of 3/4: accepted although the queue is full');
    q.queued.set('calm', Math.floor(budget * 0.75));
    assert.equal(shed.admit('calm')?.reason, 'backlog', 'at its share and the queue full: refused');
    // A newcomer is counted as active at once (its weight is added before the next window).
    assert.equal(shed.admit('newcomer'), null);
  });

  void it('under event-loop pressure refuses only the tenant submitting faster than its share drains', () => {
    const { q, shed, drain, advance } = setup();
    q.queued.set('flood', 150);
    q.queued.set('calm', 40);
    drain(100, 2); // each has 50 jobs/s of the drain rate
    // flood submits ~400/s, calm ~8/s, over two seconds.
    for (let w = 0; w < 8; w++) {
      for (let i = 0; i < 100; i++) shed.admit('flood');
      for (let i = 0; i < 2; i++) shed.admit('calm');
      for (let i = 0; i < 102; i++) shed.handedOver(i < 100 ? 'flood' : 'calm');
      for (let i = 0; i < 25; i++) shed.jobFinished(); // still draining 100 jobs/s
      advance(250);
    }
    assert.equal(shed.admit('flood'), null, 'no pressure: the backlog is under its budget');
    shed.handedOver('flood');
    for (let i = 0; i < 20; i++) shed.sampleLoopDelay(60);
    const r = shed.admit('flood');
    assert.equal(r?.reason, 'event-loop');
    assert.equal(r?.retryAfterSeconds, Math.ceil(150 / 50), 'its 150 queued at its 50 jobs/s');
    q.queued.set('flood', 99);
    assert.equal(shed.admit('flood'), null, 'under 2 s of its share queued: never starves the dispatcher');
    assert.equal(shed.admit('calm'), null, 'the calm tenant is still accepted');
    assert.equal(shed.snapshot().shedding, true);

    // No drain rate measured yet (nothing has finished): no share to hold a tenant to, so only the
    // backlog budget applies.
    const cold = setup();
    cold.q.queued.set('flood', 99);
    for (let w = 0; w < 8; w++) {
      for (let i = 0; i < 100; i++) cold.shed.admit('flood');
      for (let i = 0; i < 100; i++) cold.shed.handedOver('flood');
      cold.advance(250);
    }
    for (let i = 0; i < 20; i++) cold.shed.sampleLoopDelay(60);
    assert.equal(cold.shed.admit('flood'), null);
  });

  void it('counts admitted submissions that are not queued yet, so one burst cannot overshoot the budget', () => {
    const { shed } = setup(); // budget: the floor, 100
    let accepted = 0;
    for (let i = 0; i < 1_000; i++) if (shed.admit('a') === null) accepted++;
    assert.equal(accepted, 100);
    for (let i = 0; i < 50; i++) shed.handedOver('a'); // ended before the submitter (e.g. invalid)
    assert.equal(shed.admit('a'), null);
  });

  void it('bounds submissions in progress; disabled, it refuses nothing', () => {
    const { shed } = setup({ ...CFG, maxInFlight: 3, minBacklog: 1_000 });
    for (let i = 0; i < 3; i++) shed.submissionStarted();
    assert.equal(shed.admit('a')?.reason, 'in-flight');
    shed.submissionEnded();
    assert.equal(shed.admit('a'), null);
    const off = setup({ ...CFG, enabled: false, minBacklog: 1, maxBacklog: 1 });
    off.q.queued.set('a', 1_000_000);
    for (let i = 0; i < 10; i++) off.shed.sampleLoopDelay(1_000);
    assert.equal(off.shed.admit('a'), null);
  });

  void it('is configured from the environment, and bad values are refused with TANDEM_ERR_CONFIG', () => {
    const on = loadServiceConfig({}).shed;
    assert.equal(on.enabled, true, 'on by default');
    const c = loadServiceConfig({
      TANDEM_SHED: '0',
      TANDEM_SHED_WAIT: '5',
      TANDEM_SHED_BACKLOG: '10:20',
      TANDEM_SHED_LOOP_MS: '50',
    }).shed;
    assert.deepEqual(
      { ...c, maxInFlight: 0 },
      {
        enabled: false,
        targetWaitSeconds: 5,
        minBacklog: 10,
        maxBacklog: 20,
        maxLoopDelayMs: 50,
        maxInFlight: 0,
      },
    );
    for (const env of [
      { TANDEM_SHED: 'yes' },
      { TANDEM_SHED_WAIT: '0' },
      { TANDEM_SHED_BACKLOG: '30:20' },
      { TANDEM_SHED_LOOP_MS: 'x' },
    ])
      assert.throws(
        () => loadServiceConfig(env),
        (e: unknown) => isTandemError(e, 'TANDEM_ERR_CONFIG'),
        JSON.stringify(env),
      );
  });
});
