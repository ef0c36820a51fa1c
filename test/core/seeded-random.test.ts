/** The one seeded generator: direct and sequential access agree, and fills stay in range without zeros. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bitsAt, fillRandom, seededRandom, unitAt } from '../../src/core/seeded-random.js';

void test('seeded random: value i computed directly equals the i-th value drawn in order', () => {
  for (const seed of [0, 1, 12345, 0xffffffff]) {
    const next = seededRandom(seed);
    for (let i = 0; i < 1000; i++) assert.equal(unitAt(seed, i), next());
  }
  assert.equal(unitAt(7, 2 ** 31 + 5), bitsAt(7, 2 ** 31 + 5) / 2 ** 32);
  assert.notEqual(bitsAt(1, 0), bitsAt(2, 0));
});

void test('seeded random: fills stay in [lo, hi), are never zero, and continue a stream from `first`', () => {
  const x = fillRandom(new Float64Array(100_000), 3);
  let sum = 0;
  for (const v of x) {
    assert.ok(v >= -1 && v < 1 && v !== 0);
    sum += v;
  }
  assert.ok(Math.abs(sum / x.length) < 0.01, `mean ${sum / x.length}`);
  const y = fillRandom(new Float32Array(1000), 9, -0.5, 0.5);
  assert.ok(y.every((v) => v >= -0.5 && v <= 0.5 && v !== 0));
  assert.deepEqual(fillRandom(new Float64Array(10), 3, -1, 1, 500), x.subarray(500, 510));
});
