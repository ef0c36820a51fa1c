/**
 * The rules of cuBLASLt autotuning that need no GPU (src/devices/cuda/lt-autotune.ts): which calls may
 * be run several times for timing, and which timed candidate wins. The timing itself runs on the GPU
 * (test/gpu/lt-autotune.test.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { autotuneEnabled, pickFastest, tunable } from '../../src/devices/cuda/lt-autotune.js';
import { ltTakesGemm } from '../../src/devices/cuda/matmul.js';

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
  void it(
    'sends large, non-accumulating 16-bit gemms to cuBLASLt (and its tuner), nothing else',
    {
      skip:
        process.env['TANDEM_LT_AUTOTUNE'] === '0' || process.env['TANDEM_GEMM_VIA_LT'] === '0'
          ? 'routing turned off by the environment'
          : false,
    },
    () => {
      // GPT-2's qkv dX: dx [65536,768] = dy [65536,2304]·w [2304,768].
      const MB = 1 << 20;
      const op = {
        dtype: 'bf16' as const,
        m: 65536,
        n: 768,
        k: 2304,
        beta: 0,
        a: 1000 * MB,
        b: 2000 * MB,
        c: 3000 * MB,
      };
      assert.equal(ltTakesGemm(op), true);
      assert.equal(ltTakesGemm({ ...op, dtype: 'f16' }), true);
      assert.equal(ltTakesGemm({ ...op, dtype: 'f32' }), false, 'f32 keeps its calibrated engine');
      assert.equal(ltTakesGemm({ ...op, beta: 1 }), false, 'accumulation cannot be timed');
      assert.equal(ltTakesGemm({ ...op, m: 64 }), false, 'a small product is not worth timing');
      assert.equal(ltTakesGemm({ ...op, c: op.a + MB }), false, 'an output overlapping an input');
    },
  );
});
