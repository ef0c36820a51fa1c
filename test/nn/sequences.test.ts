/**
 * Training in sequence mode (Nn.sequences / TrainSpec.sequences): each pass's kernels go to the runtime
 * as a few sequence tasks instead of a task each. On the CPU the kernels and their order are the same,
 * so the losses and the trained parameters must be identical to the bit, with far fewer tasks.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { ImageSet } from '../../src/nn/data/images.js';
import { Nn } from '../../src/nn/context.js';
import { Trainer, sequencesByDefault, type TrainData, type TrainSpec } from '../../src/nn/train.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { cpuRuntime, randomValues } from '../runtime/helpers.js';

let rt: Runtime;
before(async () => {
  rt = await cpuRuntime();
});
after(async () => {
  await rt.close();
});

async function train(
  spec: TrainSpec,
  data: TrainData,
): Promise<{ losses: number[]; params: Float64Array[]; tasks: number }> {
  let tasks = 0;
  const counter = { onTaskEnd: (): void => void tasks++ };
  rt.addObserver(counter);
  const t = new Trainer(rt, { ...spec, device: 'cpu0' }, data);
  try {
    const losses: number[] = [];
    await t.run((r) => losses.push(r.loss));
    await rt.idle();
    rt.removeObserver(counter);
    const params = await Promise.all(t.built.model.parameters().map((p) => p.values()));
    return { losses, params, tasks };
  } finally {
    rt.removeObserver(counter);
    t.dispose();
  }
}

function sameRuns(on: Awaited<ReturnType<typeof train>>, off: Awaited<ReturnType<typeof train>>): void {
  assert.deepEqual(on.losses, off.losses, 'losses');
  assert.equal(on.params.length, off.params.length);
  for (const [i, p] of on.params.entries())
    assert.deepEqual(Array.from(p), Array.from(off.params[i]!), `param ${i}`);
  console.log(`# tasks: ${on.tasks} in sequence mode, ${off.tasks} without`);
  assert.ok(on.tasks * 5 < off.tasks, `tasks: ${on.tasks} in sequence mode, ${off.tasks} without`);
}

const tokens: TrainData = {
  kind: 'tokens',
  train: Int32Array.from(randomValues(4096, 5), (v) => Math.floor(((v + 1) / 2) * 255.999)),
};

for (const precision of ['f32', 'bf16'] as const)
  test(`gpt-micro (${precision}, AdamW with clipping): sequence mode trains to the same bits`, async () => {
    const spec: TrainSpec = {
      model: 'gpt',
      preset: 'gpt-micro',
      steps: 4,
      batch: 4,
      seqLen: 16,
      precision,
      lr: 1e-2,
      maxNorm: 1,
      seed: 3,
    };
    const off = await train(spec, tokens);
    const on = await train({ ...spec, sequences: true }, tokens);
    sameRuns(on, off);
    assert.ok(on.losses.every(Number.isFinite));
  });

test('cnn on images: sequence mode trains to the same bits', async () => {
  const count = 64;
  const set: ImageSet = {
    images: Float32Array.from(randomValues(count * 784, 9), (v) => (v + 1) / 2),
    labels: Int32Array.from({ length: count }, (_, i) => (i * 7) % 10),
    count,
    height: 28,
    width: 28,
  };
  const spec: TrainSpec = { model: 'cnn', steps: 3, batch: 8, precision: 'f32', lr: 1e-3, seed: 2 };
  const data: TrainData = { kind: 'images', train: set };
  sameRuns(await train({ ...spec, sequences: true }, data), await train(spec, data));
});

test('sequence mode: off by default in Nn; the Trainer turns it on for a GPT on CUDA only', () => {
  assert.equal(sequencesByDefault('gpt', 'cuda0'), true);
  assert.equal(sequencesByDefault('gpt', 'cuda3'), true);
  assert.equal(sequencesByDefault('gpt', 'cpu0'), false);
  assert.equal(sequencesByDefault('gpt', 'webgpu0'), false);
  assert.equal(sequencesByDefault('gpt', undefined), false);
  assert.equal(sequencesByDefault('cnn', 'cuda0'), false);
  assert.equal(sequencesByDefault('mlp', 'cuda0'), false);
  assert.equal(new Nn(rt, { device: 'cuda0' }).sequences, false);
  assert.equal(new Nn(rt, { device: 'cpu0', sequences: true }).sequences, true);
});
