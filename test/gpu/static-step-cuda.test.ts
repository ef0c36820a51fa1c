/**
 * A recorded training step replayed on a GPU (TrainSpec.staticStep): the prepared step is captured as a
 * CUDA graph on its second run — its kernels' scratch memory owned by the graph — and replayed from the
 * third, each replay after the batch and the optimizer's device scalars were written. It must follow the
 * same training run step by step (losses, weights or f32 master weights, moments), for a GPT in f32 with
 * a warm-up schedule, for the CNN in bf16 on images gathered on the device, and for the MLP in fp16 with
 * the loss scale decided on the device (through overflows and growth). (The GPT runs in f32: its
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

  void it('the MLP in fp16, loss scale on the device (amp_update in the graph): as step by step and as the host decides', async () => {
    const count = 256;
    const set: ImageSet = {
      images: Float32Array.from(randomValues(count * 784, 9), (v) => (v + 1) / 2),
      labels: Int32Array.from({ length: count }, (_, i) => (i * 3 + 1) % 10),
      count,
      height: 28,
      width: 28,
    };
    const spec: TrainSpec = {
      model: 'mlp',
      steps: 12,
      batch: 32,
      precision: 'f16',
      seed: 4,
      device: 'cuda0',
    };
    // A scale past fp16's range with growth every 2 clean steps: overflows, back-offs and growth.
    const start = {
      scale: 2 ** 24,
      growth_factor: 2,
      backoff_factor: 0.5,
      growth_interval: 2,
      _growth_tracker: 0,
    };
    const run = async (extra: Partial<TrainSpec>) => {
      const t = new Trainer(rt, { ...spec, ...extra }, { kind: 'images', train: set });
      t.restoreScaler(start);
      const losses: number[] = [];
      await t.run((r) => losses.push(r.loss));
      await t.syncState();
      // The fp32 master weights: the fp16 working copies are read as raw 16-bit words, whose integer
      // values say nothing about closeness (one ulp apart near zero reads as a large relative change).
      const params = await Promise.all(
        t.optimizer.params.map((p) => {
          const master = t.optimizer.stateTensors(p).master;
          assert.ok(master, 'fp16 training keeps fp32 master weights');
          return rt.read(master);
        }),
      );
      const out = { losses, scaler: t.scalerState(), steps: t.optimizer.steps, params };
      t.dispose();
      return out;
    };
    const before = graphStats(rt);
    const recorded = await run({ staticStep: true });
    const after = graphStats(rt);
    const plain = await run({ staticStep: false });
    const host = await run({ staticStep: false, lossScaling: 'host' });
    console.log(
      `# mlp fp16: optimizer steps ${plain.steps} of 12, scaler ${JSON.stringify(plain.scaler)}; ` +
        `graphs captured ${after.captured - before.captured}, replays ${after.replayed - before.replayed}`,
    );
    for (const [name, other] of [
      ['recorded', recorded],
      ['host', host],
    ] as const) {
      assert.deepEqual(other.scaler, plain.scaler, `${name}: scaler state`);
      assert.equal(other.steps, plain.steps, `${name}: steps taken`);
      assert.ok(maxRelDiff(other.losses, plain.losses) <= 1e-5, `${name}: losses`);
      other.params.forEach((p, i) =>
        assert.ok(
          maxRelDiff(Float64Array.from(p, Number), Float64Array.from(plain.params[i]!, Number)) <= 1e-2,
          `${name}: parameter ${i}`,
        ),
      );
    }
    assert.ok(plain.steps < 12 && plain.steps > 3, `steps taken ${plain.steps}: no overflow, or no step`);
    assert.equal(after.refused - before.refused, 0, 'the fp16 step could not be captured');
    assert.equal(after.replayed - before.replayed, spec.steps - 1);
  });
});
