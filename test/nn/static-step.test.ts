/**
 * A training step recorded once and replayed (StaticStep, TrainSpec.staticStep) against the same
 * training recorded step by step: same losses at every step, same weights and optimizer state after,
 * with a schedule whose rate changes every step (AdamW's device scalars), on a GPT, the CNN and the MLP
 * with images gathered on the device. And what a recorded step refuses.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isTandemError } from '../../src/core/errors.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { Nn } from '../../src/nn/context.js';
import type { ImageSet } from '../../src/nn/data/images.js';
import { evaluateClassifier } from '../../src/nn/evaluate.js';
import { Mlp } from '../../src/nn/models/classifiers.js';
import { dropout } from '../../src/nn/ops/elementwise.js';
import { AdamW } from '../../src/nn/optim/adamw.js';
import { Sgd } from '../../src/nn/optim/sgd.js';
import { StaticStep } from '../../src/nn/static-step.js';
import { StaticTraining } from '../../src/nn/train-static.js';
import {
  Trainer,
  staticStepByDefault,
  type StepInputs,
  type StepReport,
  type TrainData,
  type TrainSpec,
} from '../../src/nn/train.js';
import { cpuRuntime, randomValues } from '../runtime/helpers.js';
import { randomImages, randomTokens } from './train-fixtures.js';

let rt: Runtime;
before(async () => {
  rt = await cpuRuntime();
});
after(async () => {
  await rt.close();
});

const images = randomImages;
const tokens = randomTokens;

/** Losses, and every parameter and AdamW state tensor after the run. */
async function train(spec: TrainSpec, data: TrainData): Promise<{ losses: number[]; state: number[][] }> {
  const t = new Trainer(rt, spec, data);
  const reports: StepReport[] = [];
  await t.run((r) => reports.push(r));
  const state: number[][] = [];
  for (const p of t.optimizer.params) {
    state.push(Array.from(await p.values()));
    const s = t.optimizer.stateTensors(p);
    for (const x of [s.m, s.v, s.master]) if (x !== null) state.push(Array.from(await rt.read(x), Number));
  }
  assert.equal(t.optimizer.steps, spec.steps);
  t.dispose();
  for (const p of t.optimizer.params) {
    rt.free(p.data);
    if (p.grad) rt.free(p.grad);
  }
  return { losses: reports.map((r) => r.loss), state };
}

async function sameAsStepByStep(spec: TrainSpec, data: TrainData): Promise<void> {
  const plain = await train(spec, data);
  const replayed = await train({ ...spec, staticStep: true }, data);
  assert.equal(replayed.losses.length, spec.steps);
  // The same kernels on the same values in the same order: exactly the same numbers.
  assert.deepEqual(replayed.losses, plain.losses);
  assert.equal(replayed.state.length, plain.state.length);
  replayed.state.forEach((t, i) => assert.deepEqual(t, plain.state[i], `state tensor ${i}`));
}

void describe('a recorded training step replayed (StaticStep)', () => {
  it('GPT f32 with warm-up and cosine decay: the same losses and state as step by step', async () => {
    await sameAsStepByStep(
      {
        model: 'gpt',
        preset: 'gpt-micro',
        steps: 6,
        batch: 2,
        seqLen: 16,
        lr: 3e-3,
        warmupSteps: 2,
        seed: 5,
        device: 'cpu',
      },
      tokens(4000, 9),
    );
  });

  it('GPT bf16 (f32 master weights and moments): the same', async () => {
    await sameAsStepByStep(
      { model: 'gpt', preset: 'gpt-micro', steps: 4, batch: 2, seqLen: 16, precision: 'bf16', seed: 2 },
      tokens(4000, 3),
    );
  });

  it('the CNN on host batches and the MLP on images kept on the device: the same', async () => {
    await sameAsStepByStep({ model: 'cnn', steps: 3, batch: 8, seed: 4 }, images(40, 1));
    await sameAsStepByStep(
      { model: 'mlp', steps: 5, batch: 8, seed: 4, imagesOnDevice: true },
      images(40, 2),
    );
  });

  it('is the default for the MLP and the CNN on a CUDA device outside fp16, and only there', () => {
    assert.equal(staticStepByDefault('cnn', 'cuda0', 'bf16'), true);
    assert.equal(staticStepByDefault('mlp', 'cuda1', undefined), true);
    assert.equal(staticStepByDefault('mlp', 'cuda0', 'f16'), false);
    assert.equal(staticStepByDefault('gpt', 'cuda0', 'bf16'), false);
    assert.equal(staticStepByDefault('cnn', 'cpu', 'f32'), false);
    assert.equal(staticStepByDefault('cnn', 'webgpu0', 'f32'), false);
    assert.equal(staticStepByDefault('cnn', undefined, 'f32'), false);
  });

  it('survives an evaluation between two runs (nn.release frees the step, not its loss)', async () => {
    const data = images(48, 6);
    const spec: TrainSpec = { model: 'mlp', steps: 4, batch: 8, seed: 2 };
    const plain = await train(spec, data);
    const t = new Trainer(rt, { ...spec, staticStep: true }, data);
    const losses: number[] = [];
    const stop = new AbortController();
    await t.run(
      (r) => losses.push(r.loss),
      stop.signal,
      0,
      (done) => {
        if (done >= 2) stop.abort();
        return Promise.resolve();
      },
    );
    const built = t.built;
    assert.equal(built.kind, 'classifier');
    if (built.kind === 'classifier') await evaluateClassifier(t.nn, built.model, data.train as ImageSet, 8);
    await t.run((r) => losses.push(r.loss), undefined, 2);
    assert.deepEqual(losses, plain.losses);
    t.dispose();
  });

  it("refuses fp16 with the host's loss scaling, dropout, host reads and an optimizer without device scalars, and cleans up", async () => {
    assert.throws(
      () =>
        new Trainer(
          rt,
          { model: 'mlp', steps: 2, batch: 8, precision: 'f16', staticStep: true, lossScaling: 'host' },
          images(16, 1),
        ),
      (e: unknown) => isTandemError(e) && e.code === 'TANDEM_ERR_INVALID_ARGUMENT' && /fp16/.test(e.message),
    );
    const nn = new Nn(rt, { seed: 1 });
    const mlp = new Mlp(nn, { sizes: [4, 3] });
    const x = nn.input(randomValues(8, 3), [2, 4]);
    const y = nn.input([0, 2], [2], 'i32');
    const live = rt.memoryUsage().reduce((s, u) => s + u.usedBytes, 0);
    await assert.rejects(
      StaticStep.record(nn, () => dropout(nn, mlp.logits(x), 0.5)),
      (e: unknown) => isTandemError(e) && e.code === 'TANDEM_ERR_UNSUPPORTED' && /dropout/.test(e.message),
    );
    await assert.rejects(
      StaticStep.record(nn, async () => mlp.logits(x).values()),
      (e: unknown) =>
        isTandemError(e) && e.code === 'TANDEM_ERR_UNSUPPORTED' && /read a value/.test(e.message),
    );
    nn.release();
    // What the refused recordings made and freed was freed with them.
    assert.equal(
      rt.memoryUsage().reduce((s, u) => s + u.usedBytes, 0),
      live,
    );
    const sgd = new Sgd(nn, mlp.parameters(), { lr: 0.1 });
    assert.throws(
      () => sgd.replayStep({ lr: 0.1 }),
      (e: unknown) =>
        isTandemError(e) && e.code === 'TANDEM_ERR_UNSUPPORTED' && /deviceScalars/.test(e.message),
    );
    const adamw = new AdamW(nn, mlp.parameters(), { deviceScalars: true });
    const step = await StaticStep.record(nn, async () => {
      const loss = mlp.loss(x, y);
      await loss.backward();
      adamw.step({ lr: 0.01 });
      return loss;
    });
    assert.ok(step.kernels > 4, `${step.kernels} kernels recorded`);
    await step.run().done;
    adamw.replayStep({ lr: 0.005 });
    await step.run().done;
    assert.equal(adamw.steps, 2);
    step.dispose();
    assert.throws(() => step.run(), /disposed/);
    // A batch of the wrong size for the recorded inputs: refused before anything is written or run.
    const training = new StaticTraining(nn, new AdamW(nn, mlp.parameters(), { deviceScalars: true }));
    const batch = (rows: number): StepInputs => ({
      arrays: [
        { values: randomValues(rows * 4, 5), shape: [rows, 4], dtype: 'f32' },
        { values: Array.from({ length: rows }, (_, i) => i % 3), shape: [rows], dtype: 'i32' },
      ],
      loss: ([a, b]) => mlp.loss(a!, b!),
    });
    const first = await (await training.submit(batch(2), 0.01)).loss;
    await assert.rejects(
      training.submit(batch(3), 0.01),
      (e: unknown) =>
        isTandemError(e) && e.code === 'TANDEM_ERR_SHAPE' && /input 0 has 12 elements/.test(e.message),
    );
    const second = await (await training.submit(batch(2), 0.01)).loss;
    assert.ok(Number.isFinite(first) && Number.isFinite(second) && second !== first);
    training.dispose();
  });
});
