/** The kept scoring plans: least recently used dropped first, by count and by bytes, tensors freed. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_PLANS, MAX_PLAN_BYTES, ScorePlans, type ScorePlan } from '../../src/nn/inference/score-plans.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { cpuRuntime } from '../runtime/helpers.js';

function plan(rt: Runtime, bytes: number): ScorePlan {
  const ids = rt.tensor([1], 'i32');
  const index = rt.tensor([1], 'i32');
  const out = rt.tensor([Math.max(1, bytes / 4)], 'f32');
  const prepared = rt.prepareSequence({
    steps: [{ kernel: 'fill', args: { y: out }, scalars: { value: 1 } }],
  });
  return { ids, index, outputs: [out], prepared, tensors: [ids, index, out] };
}

test('plans: the least recently used goes first, by count and by bytes; its tensors are freed', async () => {
  const rt = await cpuRuntime();
  try {
    const plans = new ScorePlans((t) => rt.free(t));
    const made: ScorePlan[] = [];
    for (let i = 0; i < MAX_PLANS; i++) {
      made.push(plan(rt, 1024));
      plans.add(`p${i}`, made[i]!);
    }
    assert.equal(plans.size, MAX_PLANS);
    assert.ok(plans.get('p0'), 'p0 used again: now the most recent');
    plans.add('extra', plan(rt, 1024));
    assert.equal(plans.size, MAX_PLANS);
    assert.equal(plans.get('p1'), undefined, 'p1 was the least recently used');
    assert.ok(
      made[1]!.tensors.every((t) => t.freed),
      "p1's tensors freed",
    );
    assert.ok(plans.get('p0'));
    // One plan over the byte budget evicts all older ones but is itself kept.
    plans.add('big', plan(rt, MAX_PLAN_BYTES));
    assert.equal(plans.size, 1);
    assert.ok(made[0]!.tensors.every((t) => t.freed));
    plans.dispose();
    assert.equal(plans.size, 0);
  } finally {
    await rt.close();
  }
});
