/**
 * GPT scoring through the lane with two batches in flight (batching `instances: 2`), on the CPU: under
 * a burst of ragged requests the batcher forms irregular batches, the model runs them on bucketed kept
 * plans (a second copy of a shape whose plan is running), and every answer equals the same sequence
 * scored alone; a bad item in the burst fails alone.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seededRandom } from '../../../src/core/seeded-random.js';
import { cpuTestService } from '../helpers.js';
import { batchSize, errorCode, infer, mustRegister } from '../serving-helpers.js';

interface Top {
  readonly outputs: { readonly top: ReadonlyArray<{ readonly token: number; readonly logit: number }> };
}

test('gpt scoring, two batches in flight: a burst of ragged requests, each answer as if alone', async (t) => {
  const s = await cpuTestService(t);
  if (s === null) return;
  try {
    await mustRegister(s, {
      name: 'micro',
      kind: 'gpt',
      config: { preset: 'gpt-micro', precision: 'f32', seed: 5 },
      batching: { maxBatchSize: 16, maxQueueDelayUs: 0, instances: 2 },
    });
    const rnd = seededRandom(31);
    const seqs = Array.from({ length: 40 }, (_, i) =>
      Array.from({ length: 1 + ((i * 7) % 32) }, () => Math.floor(rnd() * 256)),
    );
    const alone: Top[] = [];
    for (const tokens of seqs) {
      const res = await infer(s, 'micro', { inputs: { tokens, topK: 3 } });
      assert.equal(res.statusCode, 200, res.body);
      alone.push(res.json() as Top);
    }
    const burst = await Promise.all([
      ...seqs.map((tokens) => infer(s, 'micro', { inputs: { tokens, topK: 3 } })),
      infer(s, 'micro', { inputs: { tokens: [1, 256], topK: 3 } }),
    ]);
    const bad = burst.pop()!;
    assert.equal(bad.statusCode, 400);
    assert.equal(errorCode(bad), 'TANDEM_ERR_INVALID_ARGUMENT');
    const sizes = new Set<number>();
    for (const [i, res] of burst.entries()) {
      assert.equal(res.statusCode, 200, res.body);
      sizes.add(batchSize(res));
      const got = (res.json() as Top).outputs.top;
      const want = alone[i]!.outputs.top;
      assert.deepEqual(
        got.map((e) => e.token),
        want.map((e) => e.token),
        `request ${i}`,
      );
      for (const [j, e] of got.entries())
        assert.ok(
          Math.abs(e.logit - want[j]!.logit) <= 1e-4 * (1 + Math.abs(want[j]!.logit)),
          `request ${i}`,
        );
    }
    assert.ok(
      [...sizes].some((n) => n > 1),
      `the burst ran in batches: sizes ${[...sizes].join(', ')}`,
    );
  } finally {
    await s.close();
  }
});
