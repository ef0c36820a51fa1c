/**
 * GradScaler against trajectories derived by hand from torch/amp/grad_scaler.py and ATen's
 * `_amp_update_scale_` (if found_inf: scale *= backoff, tracker = 0; else successful = tracker + 1,
 * and at growth_interval: scale *= growth unless that is inf in f32, tracker = 0; else tracker =
 * successful). bench/torch/grad_scaler.py prints torch's own trajectory for the same sequences.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isTandemError } from '../../src/core/errors.js';
import { GradScaler } from '../../src/nn/grad-scaler.js';

describe('GradScaler', () => {
  it("starts like torch's: scale 2^16 (f32), tracker 0, inverse 2^-16", () => {
    const s = new GradScaler();
    assert.equal(s.scale, 65536);
    assert.equal(s.growthTracker, 0);
    assert.equal(s.inverseScale, 2 ** -16);
  });

  it('follows the hand-derived trajectory with growthInterval 3', () => {
    const s = new GradScaler({ growthInterval: 3 });
    // [overflow?, scale after update, tracker after update, step applied?]
    const expected: [boolean, number, number, boolean][] = [
      [false, 65536, 1, true],
      [false, 65536, 2, true],
      [true, 32768, 0, false], // backoff, tracker reset
      [false, 32768, 1, true],
      [false, 32768, 2, true],
      [false, 65536, 0, true], // third clean step in a row: growth
      [false, 65536, 1, true],
      [false, 65536, 2, true],
      [false, 131072, 0, true],
      [true, 65536, 0, false],
      [true, 32768, 0, false], // consecutive overflows back off each time
      [false, 32768, 1, true],
    ];
    for (const [i, [overflow, scale, tracker, stepped]] of expected.entries()) {
      const r = s.update(overflow);
      assert.deepEqual(
        [r.scale, s.growthTracker, r.stepped],
        [scale, tracker, stepped],
        `iteration ${i + 1}`,
      );
      assert.equal(s.scale, scale);
    }
  });

  it('grows only on the 2000th consecutive clean step by default', () => {
    const s = new GradScaler();
    for (let i = 1; i < 2000; i++) s.update(false);
    assert.equal(s.scale, 65536);
    assert.equal(s.growthTracker, 1999);
    s.update(false);
    assert.equal(s.scale, 131072);
    assert.equal(s.growthTracker, 0);
  });

  it('an overflow at step 1999 restarts the count of 2000', () => {
    const s = new GradScaler();
    for (let i = 1; i < 2000; i++) s.update(false);
    s.update(true);
    assert.equal(s.scale, 32768);
    for (let i = 1; i < 2000; i++) s.update(false);
    assert.equal(s.scale, 32768);
    s.update(false);
    assert.equal(s.scale, 65536);
  });

  it('does not grow past the f32 range but still resets the tracker', () => {
    const s = new GradScaler({ initScale: 2 ** 127, growthInterval: 1 });
    const r = s.update(false);
    assert.equal(r.scale, 2 ** 127);
    assert.equal(s.growthTracker, 0);
  });

  it('rounds the scale to f32 after each product, like the kernel', () => {
    // 65536 · 0.3 = 19660.8 in double; the nearest f32 (spacing 2^-9 there) is 19660.80078125.
    const s = new GradScaler({ backoffFactor: 0.3 });
    assert.equal(s.update(true).scale, 19660.80078125);
    // init_scale is stored as f32 too: 0.1 -> 0.100000001490116...
    assert.equal(new GradScaler({ initScale: 0.1 }).scale, 0.10000000149011612);
    // inverse: 1/3 in double, then to f32.
    assert.equal(new GradScaler({ initScale: 3 }).inverseScale, 0.3333333432674408);
  });

  it('disabled: scale 1, never skips, update does nothing, empty state', () => {
    const s = new GradScaler({ enabled: false });
    assert.deepEqual(s.update(true), { stepped: true, scale: 1 });
    assert.equal(s.inverseScale, 1);
    assert.deepEqual(s.stateDict(), {});
  });

  it("round-trips torch's state_dict keys, and setScale keeps the tracker", () => {
    const a = new GradScaler({ growthInterval: 5 });
    a.update(false);
    a.update(true);
    a.update(false);
    a.update(false);
    const state = a.stateDict();
    assert.deepEqual(state, {
      scale: 32768,
      growth_factor: 2,
      backoff_factor: 0.5,
      growth_interval: 5,
      _growth_tracker: 2,
    });
    const b = new GradScaler();
    b.loadStateDict(state);
    for (let i = 0; i < 3; i++) b.update(false);
    assert.equal(b.scale, 65536);
    b.setScale(1024);
    assert.equal(b.scale, 1024);
    assert.equal(b.growthTracker, 0);
  });

  it('rejects factors torch rejects and malformed states', () => {
    const bad = [
      { growthFactor: 1 },
      { backoffFactor: 1 },
      { growthInterval: 0 },
      { growthInterval: 2.5 },
      { initScale: Infinity },
      { initScale: 0 },
    ];
    for (const options of bad) {
      assert.throws(
        () => new GradScaler(options),
        (e) => isTandemError(e, 'TANDEM_ERR_INVALID_ARGUMENT') && e.message.includes('GradScaler: '),
        JSON.stringify(options),
      );
    }
    assert.throws(
      () => new GradScaler().loadStateDict({}),
      (e) => isTandemError(e, 'TANDEM_ERR_INVALID_ARGUMENT'),
    );
  });
});
