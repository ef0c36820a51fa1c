/**
 * Sampling: greedy picks the first maximum, top-k/top-p restrict the draw to the right set, a seed
 * reproduces a stream, and the empirical frequencies of temperature sampling match the softmax.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isTandemError } from '../../src/core/errors.js';
import { Sampler, argmax, topEntries } from '../../src/nn/inference/sampling.js';

const LOGITS = Float32Array.from([0.5, 2, -1, 2, 1.5, NaN, 0]);

void describe('sampling', () => {
  void it('greedy and top entries', () => {
    assert.equal(argmax(LOGITS), 1);
    assert.equal(new Sampler().next(LOGITS), 1);
    assert.deepEqual(
      topEntries(LOGITS, 3).map(([i]) => i),
      [1, 3, 4],
    );
    assert.deepEqual(
      topEntries(LOGITS, 10).map(([i]) => i),
      [1, 3, 4, 0, 6, 2],
    );
  });

  void it('top-k and top-p keep only the allowed tokens; a seed reproduces the stream', () => {
    const k2 = new Sampler({ temperature: 1, topK: 2, seed: 5 });
    const drawn = new Set(Array.from({ length: 200 }, () => k2.next(LOGITS)));
    assert.deepEqual([...drawn].sort(), [1, 3]);
    // Probabilities at T=1: tokens 1 and 3 hold 2·e²/Σ ≈ 0.63 of the mass; p = 0.5 keeps just those two.
    const p = new Sampler({ temperature: 1, topP: 0.5, seed: 6 });
    assert.ok(Array.from({ length: 200 }, () => p.next(LOGITS)).every((t) => t === 1 || t === 3));
    const a = new Sampler({ temperature: 0.8, seed: 42 });
    const b = new Sampler({ temperature: 0.8, seed: 42 });
    const sa = Array.from({ length: 50 }, () => a.next(LOGITS));
    assert.deepEqual(
      sa,
      Array.from({ length: 50 }, () => b.next(LOGITS)),
    );
    assert.ok(new Set(sa).size > 2);
  });

  void it('temperature sampling follows the softmax', () => {
    const logits = [1, 0, -1, 0.5];
    const t = 0.7;
    const w = logits.map((v) => Math.exp(v / t));
    const z = w.reduce((s, v) => s + v, 0);
    const s = new Sampler({ temperature: t, seed: 9 });
    const n = 40000;
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < n; i++) counts[s.next(logits)]!++;
    counts.forEach((c, i) => {
      const p = w[i]! / z;
      // 5 standard deviations of a binomial count.
      assert.ok(Math.abs(c - n * p) < 5 * Math.sqrt(n * p * (1 - p)), `token ${i}: ${c} vs ${n * p}`);
    });
  });

  void it('rejects bad options', () => {
    for (const o of [{ temperature: -1 }, { topK: 1.5 }, { topP: 0 }, { topP: 1.5 }, { seed: -2 }])
      assert.throws(
        () => new Sampler(o),
        (e: unknown) => isTandemError(e) && e.code === 'TANDEM_ERR_INVALID_ARGUMENT',
      );
  });
});
