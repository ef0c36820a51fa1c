/**
 * Gradient check of attention_backward's float64 reference: with y and lse from the forward reference,
 * its dqkv must equal central finite differences of L(qkv) = Σ y(qkv) ⊙ r for a random r (so dy = r).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { seededRandom } from '../../src/core/seeded-random.js';
import type { Scalars } from '../../src/devices/device.js';
import { type AttentionDims, attentionDims } from '../../src/kernels/attention/params.js';
import { attentionForward } from '../../src/kernels/attention/reference.js';
import { attentionBackwardValues } from '../../src/kernels/attention_backward/reference.js';

function dims(
  batch: number,
  seq: number,
  heads: number,
  headDim: number,
  scalars: Scalars = {},
): AttentionDims {
  const width = heads * headDim;
  const desc = { shape: [batch, seq, 3 * width], dtype: 'f64' as const, bytes: batch * seq * 3 * width * 8 };
  return attentionDims('attention', desc, { heads, ...scalars });
}

function randoms(n: number, rnd: () => number): Float64Array {
  return Float64Array.from({ length: n }, () => 2 * rnd() - 1);
}

function loss(d: AttentionDims, qkv: Float64Array, r: Float64Array): number {
  const { y } = attentionForward(d, qkv);
  let sum = 0;
  for (let i = 0; i < y.length; i++) sum += y[i]! * r[i]!;
  return sum;
}

/** Largest |analytic − numeric| / (1 + |analytic|) over every element of qkv. */
function worstGradientError(d: AttentionDims, seed: number): number {
  const rnd = seededRandom(seed);
  const qkv = randoms(d.batch * d.seq * 3 * d.width, rnd);
  const r = randoms(d.batch * d.seq * d.width, rnd);
  const { y, lse } = attentionForward(d, qkv);
  const analytic = attentionBackwardValues(d, r, qkv, y, lse);
  const h = 1e-6;
  let worst = 0;
  for (let i = 0; i < qkv.length; i++) {
    const x = qkv[i]!;
    qkv[i] = x + h;
    const up = loss(d, qkv, r);
    qkv[i] = x - h;
    const down = loss(d, qkv, r);
    qkv[i] = x;
    const numeric = (up - down) / (2 * h);
    worst = Math.max(worst, Math.abs(analytic[i]! - numeric) / (1 + Math.abs(analytic[i]!)));
  }
  return worst;
}

void describe('attention_backward reference vs finite differences of attention', () => {
  const shapes: readonly { name: string; d: AttentionDims }[] = [
    { name: 'B2 T5 H2 d3, default scale', d: dims(2, 5, 2, 3) },
    { name: 'B1 T6 H1 d4, scale 0.7', d: dims(1, 6, 1, 4, { scale: 0.7 }) },
    { name: 'B1 T1 H3 d2 (one key per row)', d: dims(1, 1, 3, 2) },
    { name: 'B1 T9 H4 d2', d: dims(1, 9, 4, 2) },
  ];
  for (const { name, d } of shapes) {
    void it(name, () => {
      const worst = worstGradientError(d, 7);
      assert.ok(worst < 1e-7, `worst relative gradient error ${worst}`);
    });
  }

  void it('detects a wrong gradient (the check can fail)', () => {
    // The same comparison with dq scaled by 1.01 must exceed the bar used above.
    const d = dims(1, 4, 1, 3);
    const rnd = seededRandom(3);
    const qkv = randoms(d.seq * 3 * d.width, rnd);
    const r = randoms(d.seq * d.width, rnd);
    const { y, lse } = attentionForward(d, qkv);
    const analytic = attentionBackwardValues(d, r, qkv, y, lse);
    const i = 3 * d.width + 1; // q of row 1 (row 0's q has no gradient: softmax over one key)
    const h = 1e-6;
    const x = qkv[i]!;
    qkv[i] = x + h;
    const up = loss(d, qkv, r);
    qkv[i] = x - h;
    const down = loss(d, qkv, r);
    const numeric = (up - down) / (2 * h);
    assert.ok(Math.abs(numeric) > 1e-3, 'the probed element has a non-trivial gradient');
    assert.ok(Math.abs(1.01 * analytic[i]! - numeric) / (1 + Math.abs(analytic[i]!)) > 1e-7);
    assert.ok(Math.abs(analytic[i]! - numeric) / (1 + Math.abs(analytic[i]!)) < 1e-7);
  });
});

void describe('attention forward reference', () => {
  void it('lse is the log-sum-exp of the scaled causal scores and y averages v', () => {
    // One head, d = 1: scores are scale·q_t·k_s, so both are easy to write out by hand.
    const d = dims(1, 3, 1, 1, { scale: 0.5 });
    const q = [0.3, -0.7, 1.1];
    const k = [0.9, 0.2, -0.4];
    const v = [2, -1, 0.5];
    const qkv = Float64Array.from({ length: 9 }, (_, i) => [q, k, v][i % 3]![Math.floor(i / 3)]!);
    const { y, lse } = attentionForward(d, qkv);
    for (let t = 0; t < 3; t++) {
      const scores = [0, 1, 2].filter((s) => s <= t).map((s) => 0.5 * q[t]! * k[s]!);
      const sum = scores.reduce((a, s) => a + Math.exp(s), 0);
      assert.ok(Math.abs(lse[t]! - Math.log(sum)) < 1e-15);
      const want = scores.reduce((a, s, j) => a + (Math.exp(s) / sum) * v[j]!, 0);
      assert.ok(Math.abs(y[t]! - want) < 1e-15, `y[${t}] = ${y[t]}, want ${want}`);
    }
  });
});
