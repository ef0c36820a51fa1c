/**
 * The rules of cuBLASLt autotuning that need no GPU (src/devices/cuda/lt-autotune.ts): which calls may
 * be run several times for timing, and which timed candidate wins. The timing itself runs on the GPU
 * (test/gpu/lt-autotune.test.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { autotuneEnabled, pickFastest, tunable } from '../../src/devices/cuda/lt-autotune.js';

void describe('lt autotune rules', () => {
  const out = { ptr: 0x10000, bytes: 0x1000 };
  void it('tunes only calls that timing runs leave unchanged', () => {
    assert.equal(tunable(0, out, [{ ptr: 0x20000, bytes: 0x1000 }]), true);
    assert.equal(tunable(1, out, [{ ptr: 0x20000, bytes: 0x1000 }]), false, 'accumulation');
    assert.equal(tunable(0.5, out, []), false, 'any beta but 0');
    assert.equal(tunable(0, out, [{ ptr: 0x10800, bytes: 0x10 }]), false, 'an input inside the output');
    assert.equal(tunable(0, out, [{ ptr: 0xf000, bytes: 0x1001 }]), false, 'an input ending inside it');
    assert.equal(tunable(0, out, [{ ptr: 0xf000, bytes: 0x1000 }]), true, 'adjacent below');
    assert.equal(tunable(0, out, [{ ptr: 0x11000, bytes: 0x1000 }]), true, 'adjacent above');
    assert.equal(tunable(0, out, [{ ptr: 0, bytes: 0x1000 }]), true, 'an absent operand (null pointer)');
  });
  void it('keeps the heuristic first choice unless another is clearly faster', () => {
    assert.equal(pickFastest([1.0, 0.995, 1.2]), 0, 'within 2 %: the heuristic');
    assert.equal(pickFastest([1.0, 0.9, 0.95]), 1);
    assert.equal(pickFastest([1.0, 0.9, 0.85]), 2);
    assert.equal(pickFastest([NaN, 1.3, 1.1]), 2, 'a first candidate that did not run');
    assert.equal(pickFastest([1.0, NaN, 0.5]), 2, 'refused candidates are skipped');
    assert.equal(pickFastest([0.7]), 0);
  });
  void it('is on unless TANDEM_LT_AUTOTUNE=0', () => {
    assert.equal(autotuneEnabled({}), true);
    assert.equal(autotuneEnabled({ TANDEM_LT_AUTOTUNE: '0' }), false);
    assert.equal(autotuneEnabled({ TANDEM_LT_AUTOTUNE: '1' }), true);
  });
});
