/**
 * checkJsonShape against a recursive reference on random JSON trees: it refuses exactly the bodies that
 * hold more values, or nest deeper, than the limits, naming which limit; flat arrays of numbers (the
 * fast path) included.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isTandemError } from '../../src/core/errors.js';
import { checkJsonShape } from '../../src/service/http/body-limits.js';

/** Values and container depth of `v`, counted recursively (the body itself is depth 1). */
function reference(v: unknown, depth = 1): { values: number; depth: number } {
  if (typeof v !== 'object' || v === null) return { values: 1, depth: 0 };
  let values = 1;
  let deepest = depth;
  for (const x of Array.isArray(v) ? (v as unknown[]) : Object.values(v)) {
    const r = reference(x, depth + 1);
    values += r.values;
    deepest = Math.max(deepest, r.depth);
  }
  return { values, depth: deepest };
}

function randomTree(rand: () => number, depth: number): unknown {
  const r = rand();
  if (depth > 7 || r < 0.35) {
    const p = rand();
    return p < 0.5
      ? Math.floor(rand() * 1000)
      : p < 0.7
        ? 'x'.repeat(Math.floor(rand() * 4))
        : p < 0.85
          ? null
          : true;
  }
  const n = Math.floor(rand() * 6);
  if (r < 0.55) return Array.from({ length: n + Math.floor(rand() * 40) }, () => rand()); // flat numbers
  if (r < 0.8) return Array.from({ length: n }, () => randomTree(rand, depth + 1));
  return Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, randomTree(rand, depth + 1)]));
}

void test('checkJsonShape refuses exactly what exceeds the limits, on random trees', () => {
  let seed = 12345;
  const rand = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  let refused = 0;
  for (let i = 0; i < 3000; i++) {
    const body = randomTree(rand, 1);
    const ref = reference(body);
    const limits = { maxDepth: 1 + Math.floor(rand() * 8), maxValues: 1 + Math.floor(rand() * 150) };
    const overValues = ref.values > limits.maxValues;
    const overDepth = ref.depth > limits.maxDepth;
    let err: unknown = null;
    try {
      checkJsonShape(body, limits);
    } catch (e) {
      err = e;
    }
    assert.equal(
      err !== null,
      overValues || overDepth,
      `tree ${i}: ${JSON.stringify(ref)} vs ${JSON.stringify(limits)}`,
    );
    if (err === null) continue;
    refused++;
    assert.ok(isTandemError(err, 'TANDEM_ERR_LIMIT'));
    const which = err.details['limit'];
    if (!overValues) assert.equal(which, 'depth');
    if (!overDepth) assert.equal(which, 'values');
  }
  assert.ok(refused > 300 && refused < 2700, `a mix of refused and accepted trees (${refused} refused)`);
});

void test('a flat array of numbers at exactly the value limit passes, one more is refused', () => {
  const limits = { maxDepth: 4, maxValues: 1 + 1 + 1000 };
  const body = { tokens: Array.from({ length: 1000 }, () => Math.floor(Math.random() * 50257)) };
  checkJsonShape(body, limits);
  body.tokens.push(1);
  assert.throws(
    () => checkJsonShape(body, limits),
    (e: unknown) => isTandemError(e, 'TANDEM_ERR_LIMIT'),
  );
});
