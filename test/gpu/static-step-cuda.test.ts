/**
 * A recorded training step replayed on a GPU (TrainSpec.staticStep): the prepared step is captured as a
 * CUDA graph on its second run — its kernels' scratch memory owned by the graph — and replayed from the
 * third, each replay after the batch and the optimizer's device scalars were written. It must follow the
 * same training run step by step (losses, weights or f32 master weights, moments), for a GPT in f32 with
 * a warm-up schedule and for the CNN in bf16 on images gathered on the device. (The GPT runs in f32: its
 * embedding backward adds rows with atomics, whose order varies from run to run, and in bf16 a gradient
 * can then round to the neighbouring value in either run alone.) Skipped without CUDA.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { ImageSet } from '../../src/nn/data/images.js';
import { Trainer, type StepReport, type TrainData, type TrainSpec } from '../../src/nn/train.js';
import { randomValues } from '../runtime/helpers.js';
import { cudaRuntime, graphStats, maxRelDiff } from './cuda-runtime.js';

const { rt, hasCuda, reason } = await cudaRuntime('tandem-static-');
after(() => rt.close());

async function train(spec: TrainSpec, data: TrainData): Promise<{ losses: number[]; state: Float64Array[] }> {
  const t = new Trainer(rt, spec, data);
  const reports: StepReport[] = [];
  await t.run((r) => reports.push(r));
  const state: Float64Array[] = [];
  for (const p of t.optimizer.params) {
    const s = t.optimizer.stateTensors(p);
    for (const x of [s.master ?? p.data, s.m, s.v]) state.push(Float64Array.from(await rt.read(x), Number));
  }
  t.dispose();
  for (const p of t.optimizer.params) {
    rt.free(p.data);
    if (p.grad) rt.free(p.grad);
  }
  return { losses: reports.map((r) => r.loss), state };
}

async function compare(name: string, spec: TrainSpec, data: TrainData): Promise<void> {
  const plain = await train({ ...spec, staticStep: false }, data);
  const before = graphStats(rt);
  const replayed = await train({ ...spec, staticStep: true }, data);
  const after = graphStats(rt);
  const lossDiff = maxRelDiff(replayed.losses, plain.losses);
  const stateDiff = Math.max(...replayed.state.map((t, i) => maxRelDiff(t, plain.state[i]!)));
  const captured = after.captured - before.captured;
  const replays = after.replayed - before.replayed;
  console.log(
    `# ${name}: ${spec.steps} steps, losses ${plain.losses[0]!.toFixed(4)} → ${plain.losses.at(-1)!.toFixed(4)}; ` +
      `replayed vs step by step: loss ${lossDiff.toExponential(2)}, state ${stateDiff.toExponential(2)}` +
      `${lossDiff === 0 && stateDiff === 0 ? ' (exact)' : ''}; graphs captured ${captured}, replays ${replays}, refused ${after.refused - before.refused}`,
  );
  assert.ok(lossDiff <= 1e-5, `losses differ by ${lossDiff}`);
  assert.ok(stateDiff <= 1e-5, `weights or moments differ by ${stateDiff}`);
  // Run 1 step by step, run 2 captured (and launched), runs 3.. replayed: every run after the first a graph.
  assert.equal(after.refused - before.refused, 0, 'the step could not be captured');
  assert.equal(captured, 1);
  assert.equal(replays, spec.steps - 1);
}

void describe('a recorded training step replayed as a CUDA graph', { skip: hasCuda ? false : reason }, () => {
  void it('GPT f32 with a warm-up schedule: the same losses, weights and moments as step by step', async () => {
    const tokens = Int32Array.from(randomValues(200_000, 11), (v) => Math.floor((v + 1) * 25_000));
    await compare(
      'gpt-mini f32',
      {
        model: 'gpt',
        preset: 'gpt-mini',
        steps: 8,
        batch: 4,
        seqLen: 128,
        precision: 'f32',
        warmupSteps: 3,
        seed: 7,
        device: 'cuda0',
      },
      { kind: 'tokens', train: tokens },
    );
  });

  void it('the CNN in bf16 on images gathered on the device: the same', async () => {
    const count = 600;
    const set: ImageSet = {
      images: Float32Array.from(randomValues(count * 784, 5), (v) => (v + 1) / 2),
      labels: Int32Array.from({ length: count }, (_, i) => (i * 7 + 3) % 10),
      count,
      height: 28,
      width: 28,
    };
    await compare(
      'cnn bf16',
      {
        model: 'cnn',
        steps: 6,
        batch: 64,
        precision: 'bf16',
        seed: 3,
        device: 'cuda0',
        imagesOnDevice: true,
      },
      { kind: 'images', train: set },
    );
  });
});
