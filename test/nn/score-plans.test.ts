/** The kept scoring plans: least recently used dropped first, by count and by bytes, tensors freed. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  DEFAULT_PLAN_LIMITS,
  ScorePlans,
  bucketUp,
  planShape,
  type ScorePlan,
} from '../../src/nn/inference/score-plans.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { cpuRuntime } from '../runtime/helpers.js';

function plan(rt: Runtime, bytes: number): ScorePlan {
  const ids = rt.tensor([1], 'i32');
  const index = rt.tensor([1], 'i32');
  const out = rt.tensor([Math.max(1, bytes / 4)], 'f32');
  const prepared = rt.prepareSequence({
    steps: [{ kernel: 'fill', args: { y: out }, scalars: { value: 1 } }],
  });
  return { inputs: [ids, index], outputs: [out], prepared, tensors: [ids, index, out] };
}

test('plans: the least recently used goes first, by count and by bytes; its tensors are freed', async () => {
  const rt = await cpuRuntime();
  try {
    const limits = { ...DEFAULT_PLAN_LIMITS, maxPlans: 6, maxBytes: 1 << 20 };
    const plans = new ScorePlans((t) => rt.free(t), limits);
    const made: ScorePlan[] = [];
    for (let i = 0; i < limits.maxPlans; i++) {
      made.push(plan(rt, 1024));
      plans.add(`p${i}`, made[i]!);
    }
    assert.equal(plans.size, limits.maxPlans);
    assert.ok(plans.get('p0'), 'p0 used again: now the most recent');
    plans.add('extra', plan(rt, 1024));
    assert.equal(plans.size, limits.maxPlans);
    assert.equal(plans.get('p1'), undefined, 'p1 was the least recently used');
    assert.ok(
      made[1]!.tensors.every((t) => t.freed),
      "p1's tensors freed",
    );
    assert.ok(plans.get('p0'));
    // One plan over the byte budget evicts all older ones but is itself kept.
    plans.add('big', plan(rt, limits.maxBytes));
    assert.equal(plans.size, 1);
    assert.ok(made[0]!.tensors.every((t) => t.freed));
    assert.ok(plans.heldBytes >= limits.maxBytes);
    plans.dispose();
    assert.equal(plans.size, 0);
    assert.equal(plans.heldBytes, 0);
  } finally {
    await rt.close();
  }
});

test('plans: a shape whose plan is running gets a second copy, never a third', async () => {
  const rt = await cpuRuntime();
  try {
    const plans = new ScorePlans((t) => rt.free(t), { ...DEFAULT_PLAN_LIMITS, copies: 2 });
    const first = plans.pick('64x128');
    assert.equal(first.plan, undefined, 'nothing kept yet: make copy 0');
    const p0 = plan(rt, 64);
    plans.add(first.key, p0);
    assert.equal(plans.pick('64x128').plan, p0, 'copy 0 is idle: reused');
    const end0 = plans.begin(first.key);
    const second = plans.pick('64x128');
    assert.equal(second.plan, undefined, 'copy 0 runs: make copy 1');
    assert.notEqual(second.key, first.key);
    const p1 = plan(rt, 64);
    plans.add(second.key, p1);
    assert.equal(plans.pick('64x128').plan, p1, 'copy 1 is idle');
    const end1 = plans.begin(second.key);
    const third = plans.pick('64x128');
    assert.equal(third.plan, p0, 'both run: queue behind copy 0');
    end0();
    end1();
    assert.equal(plans.pick('64x128').plan, p0);
    assert.equal(plans.size, 2);
    plans.dispose();
  } finally {
    await rt.close();
  }
});

test('shapes: bucketed sizes pad at most a fifth, four a power of two; exact when buckets do not fit', () => {
  assert.deepEqual(
    [1, 2, 3, 4, 5, 8, 9, 11, 16, 17, 25, 29, 33, 41, 57, 64, 65, 100, 128].map(bucketUp),
    [1, 2, 3, 4, 5, 8, 10, 12, 16, 20, 28, 32, 40, 48, 64, 64, 80, 112, 128],
  );
  const sizes = new Set<number>();
  for (let n = 1; n <= 1024; n++) {
    const b = bucketUp(n);
    assert.ok(b >= n && (b - n) / b <= 0.2, `${n} → ${b}`);
    sizes.add(b);
  }
  assert.equal(sizes.size, 4 + 4 * 8, 'sizes 1…1024: 1–4, then 4 per octave');
  const limits = { ...DEFAULT_PLAN_LIMITS, maxRows: 8192 };
  assert.deepEqual(planShape(33, 100, 1024, limits), { b: 40, t: 112 });
  assert.deepEqual(planShape(3, 1000, 1000, limits), { b: 3, t: 1000 }, 'length capped at the context');
  assert.deepEqual(planShape(63, 128, 1024, limits), { b: 64, t: 128 });
  assert.deepEqual(planShape(60, 130, 1024, limits), { b: 60, t: 130 }, '64 × 160 is over 8192: exact');
  assert.equal(planShape(64, 129, 1024, limits), null, 'over the limit even exact: no plan');
  assert.deepEqual(planShape(33, 100, 1024, { ...limits, bucketed: false }), { b: 33, t: 100 });
  assert.equal(planShape(1, 1, 1024, { ...limits, maxRows: 0 }), null);
});
