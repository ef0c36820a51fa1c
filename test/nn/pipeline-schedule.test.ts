/**
 * The pipeline schedules and their simulation: each stage's pass order (1F1B and GPipe), a submission
 * order that respects every cross-stage dependency, the bubble (p − 1)/(m + p − 1) with equal stage
 * times, 1F1B's bounded activations, and a hand-worked case with unequal times and transfers.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isTandemError } from '../../src/core/errors.js';
import { gptConfig, type GptConfig } from '../../src/nn/models/gpt.js';
import { balancedSplit, evenSplit } from '../../src/nn/parallel/gpt-stage.js';
import {
  scheduleOrders,
  simulateSchedule,
  stageOrder,
  submissionOrder,
  theoreticalBubble,
  type ScheduleKind,
} from '../../src/nn/parallel/schedule.js';

const fmt = (ops: readonly { kind: string; micro: number }[]): string =>
  ops.map((o) => `${o.kind}${o.micro}`).join(' ');

void describe('pipeline schedules', () => {
  it('1F1B: p − 1 − s warm-up forwards, then one forward one backward, then the cool-down', () => {
    assert.equal(fmt(stageOrder('1f1b', 4, 6, 0)), 'F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5');
    assert.equal(fmt(stageOrder('1f1b', 4, 6, 2)), 'F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 B5');
    assert.equal(fmt(stageOrder('1f1b', 4, 6, 3)), 'F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5');
    // Fewer micro-batches than warm-up slots: every forward first.
    assert.equal(fmt(stageOrder('1f1b', 4, 2, 0)), 'F0 F1 B0 B1');
    assert.equal(fmt(stageOrder('gpipe', 3, 3, 1)), 'F0 F1 F2 B0 B1 B2');
  });

  it('every pass is submitted after the passes it reads from, each stage in its own order', () => {
    for (const kind of ['1f1b', 'gpipe'] as ScheduleKind[])
      for (const [p, m] of [
        [2, 8],
        [3, 4],
        [4, 3],
        [5, 1],
      ] as const) {
        const orders = scheduleOrders(kind, p, m);
        const seq = submissionOrder(orders);
        assert.equal(seq.length, 2 * p * m);
        const at = new Map(seq.map((x, i) => [`${x.stage}${x.op.kind}${x.op.micro}`, i]));
        for (let s = 0; s < p; s++) {
          assert.equal(fmt(seq.filter((x) => x.stage === s).map((x) => x.op)), fmt(orders[s]!));
          for (let j = 0; j < m; j++) {
            if (s > 0) assert.ok(at.get(`${s}F${j}`)! > at.get(`${s - 1}F${j}`)!);
            if (s < p - 1) assert.ok(at.get(`${s}B${j}`)! > at.get(`${s + 1}B${j}`)!);
            else assert.ok(at.get(`${s}B${j}`)! > at.get(`${s}F${j}`)!);
          }
        }
      }
  });

  it('with equal stage times the bubble is (p − 1)/(m + p − 1) for both schedules', () => {
    for (const kind of ['1f1b', 'gpipe'] as ScheduleKind[])
      for (const [p, m] of [
        [2, 8],
        [2, 1],
        [3, 4],
        [4, 16],
        [8, 8],
      ] as const) {
        const f = 1.5;
        const b = 3;
        const sim = simulateSchedule(kind, p, m, {
          forward: new Array<number>(p).fill(f),
          backward: new Array<number>(p).fill(b),
        });
        const expected = (p - 1) / (m + p - 1);
        assert.equal(theoreticalBubble(p, m), expected);
        assert.ok(
          Math.abs(sim.bubble - expected) < 1e-12,
          `${kind} p=${p} m=${m}: ${sim.bubble} vs ${expected}`,
        );
        assert.ok(Math.abs(sim.makespan - (m + p - 1) * (f + b)) < 1e-9);
        for (const idle of sim.idle) assert.ok(Math.abs(idle - expected) < 1e-12);
      }
  });

  it("1F1B holds at most p micro-batches' activations per stage, GPipe holds all m", () => {
    for (const [p, m] of [
      [2, 8],
      [4, 16],
      [4, 2],
    ] as const) {
      const one = simulateSchedule('1f1b', p, m, { forward: Array(p).fill(1), backward: Array(p).fill(2) });
      const gp = simulateSchedule('gpipe', p, m, { forward: Array(p).fill(1), backward: Array(p).fill(2) });
      one.peakInFlight.forEach((peak, s) => {
        assert.ok(peak <= p, `stage ${s}: ${peak}`);
        assert.equal(peak, Math.min(p - s, m));
      });
      assert.deepEqual(gp.peakInFlight, Array(p).fill(m));
    }
  });

  it('unequal times and a transfer: the hand-worked 2-stage, 2-micro-batch timeline', () => {
    // Stage 0: F0 [0,1] F1 [1,2] B0 [5,7] B1 [8,10]; stage 1: F0 [1.5,2.5] B0 [2.5,4.5] F1 [4.5,5.5]
    // B1 [5.5,7.5]. Every transfer costs 0.5.
    const sim = simulateSchedule('1f1b', 2, 2, { forward: [1, 1], backward: [2, 2], transfer: 0.5 });
    assert.equal(sim.makespan, 10);
    const span = (s: number, k: string, j: number): [number, number] => {
      const o = sim.ops.find((x) => x.stage === s && x.kind === k && x.micro === j)!;
      return [o.start, o.end];
    };
    assert.deepEqual(span(0, 'B', 0), [5, 7]);
    assert.deepEqual(span(1, 'F', 1), [4.5, 5.5]);
    assert.deepEqual(span(0, 'B', 1), [8, 10]);
    assert.deepEqual(sim.busy, [6, 6]);
    assert.ok(Math.abs(sim.bubble - 0.4) < 1e-12);
  });

  it('balancedSplit: the head counted on the last stage, never worse than the even split', () => {
    // GPT-2 medium, T = 1024: a layer is 24·1024² + 2·1024·1024 ≈ 27.3 MFLOP a token, the head
    // 2·1024·50304 ≈ 103 M (3.8 layers): 14 + 10 layers (382 vs 376) beats 13 + 11 (354 vs 403).
    assert.deepEqual(balancedSplit(gptConfig('gpt2-medium'), 2), [14, 10]);
    const cost = (c: GptConfig, split: number[], t: number): number =>
      Math.max(
        ...split.map(
          (n, s) =>
            n * (24 * c.width ** 2 + 2 * t * c.width) +
            (s === split.length - 1 ? 2 * c.width * c.paddedVocab : 0),
        ),
      );
    for (const preset of ['gpt2', 'gpt2-medium', 'gpt-mini', 'gpt-micro'])
      for (const stages of [1, 2, 3, 4]) {
        const c = gptConfig(preset);
        if (stages > c.layers) {
          assert.throws(() => balancedSplit(c, stages), /each stage needs at least one layer/);
          continue;
        }
        const split = balancedSplit(c, stages, 256);
        assert.equal(split.length, stages);
        assert.equal(
          split.reduce((a, b) => a + b, 0),
          c.layers,
        );
        assert.ok(split.every((n) => n >= 1));
        assert.ok(
          cost(c, split, 256) <= cost(c, evenSplit(c.layers, stages), 256),
          `${preset} ${stages}: ${split}`,
        );
      }
  });

  it('bad counts and kinds are refused with stable codes', () => {
    const code = (fn: () => unknown): string | undefined => {
      try {
        fn();
      } catch (e) {
        return isTandemError(e) ? e.code : 'not a TandemError';
      }
      return undefined;
    };
    assert.equal(
      code(() => stageOrder('1f1b', 0, 4, 0)),
      'TANDEM_ERR_INVALID_ARGUMENT',
    );
    assert.equal(
      code(() => stageOrder('gpipe', 2, 1.5, 0)),
      'TANDEM_ERR_INVALID_ARGUMENT',
    );
    assert.equal(
      code(() => simulateSchedule('1f1b', 2, 4, { forward: [1], backward: [1, 1] })),
      'TANDEM_ERR_INVALID_ARGUMENT',
    );
  });
});
