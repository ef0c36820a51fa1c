/**
 * fp16 loss scaling decided on the device (DeviceGradScaler, amp_update) against the same training with
 * the decision on the host (lossScaling 'host': the norm read every step, grad-scaler.ts's GradScaler):
 * the same losses, scales, growth trackers, skipped steps and parameters at every step, through
 * overflows and growth; and a checkpoint taken mid-run resumes with the device's scale and step count.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Runtime } from '../../src/runtime/runtime.js';
import { latestCheckpoint, loadCheckpoint, saveCheckpoint } from '../../src/nn/checkpoint.js';
import type { GradScalerState } from '../../src/nn/grad-scaler.js';
import { Nn } from '../../src/nn/context.js';
import { reshape } from '../../src/nn/ops/elementwise.js';
import { linear } from '../../src/nn/ops/linear.js';
import { Trainer, type TrainSpec } from '../../src/nn/train.js';
import { cpuRuntime } from '../runtime/helpers.js';
import { randomImages, randomTokens } from './train-fixtures.js';

let rt: Runtime;
let dir: string;
before(async () => {
  rt = await cpuRuntime();
  dir = mkdtempSync(join(tmpdir(), 'tandem-amp-'));
});
after(async () => {
  await rt.close();
});

/**
 * A scale far past fp16's range (the first steps overflow and back off) and growth every 2 clean steps
 * (growth overflows again): every branch of GradScaler's update within a dozen steps.
 */
const START: GradScalerState = {
  scale: 2 ** 21,
  growth_factor: 2,
  backoff_factor: 0.5,
  growth_interval: 2,
  _growth_tracker: 0,
};

interface StepState {
  readonly loss: number;
  readonly scale: number;
  readonly tracker: number;
  readonly optimizerSteps: number;
}

/** Runs `steps` steps by hand (Trainer.run's body) and reads the scaler's state after each. */
async function trajectory(spec: TrainSpec, data: Parameters<typeof newTrainer>[1], steps: number) {
  const t = newTrainer(spec, data);
  t.restoreScaler(START);
  const out: StepState[] = [];
  for (let it = 0; it < steps; it++) {
    t.seedLossScale();
    const loss = t.submitStep();
    await loss.backward();
    await t.update(3e-3);
    t.endStep();
    await t.syncState();
    out.push({
      loss: await loss.item(),
      scale: t.scaler!.scale,
      tracker: t.scaler!.growthTracker,
      optimizerSteps: t.optimizer.steps,
    });
  }
  const params = await Promise.all(t.optimizer.params.map(async (p) => Array.from(await p.values())));
  t.dispose();
  return { out, params };
}

function newTrainer(spec: TrainSpec, data: ConstructorParameters<typeof Trainer>[2]): Trainer {
  return new Trainer(rt, spec, data);
}

void describe('a loss gradient seeded from a device scale (Nn.lossScaleTensor)', () => {
  it('a loss without a fused gradient is seeded by a cast of the scale: the host factor’s gradients', async () => {
    const grads: number[][] = [];
    for (const onDevice of [false, true]) {
      const nn = new Nn(rt, { seed: 1 });
      const w = nn.parameter([1, 3], [0.5, -1.5, 2], 'w');
      const x = nn.input([0.25, 3, -7], [1, 3]);
      const scale = rt.tensor([1], 'f64', [8]);
      if (onDevice) nn.lossScaleTensor = scale;
      else nn.lossScale = 8;
      const y = reshape(nn, linear(nn, x, w, null), [1]);
      await y.backward();
      grads.push(Array.from(await w.gradValues()));
      rt.free(scale);
    }
    assert.deepEqual(grads[1], grads[0]);
    assert.deepEqual(grads[0], [2, 24, -56]);
  });
});

void describe('fp16 loss scaling on the device', () => {
  for (const [label, spec, data] of [
    ['mlp', { model: 'mlp', steps: 12, batch: 8, precision: 'f16', seed: 3 }, randomImages(64, 2)],
    [
      'gpt-micro',
      { model: 'gpt', preset: 'gpt-micro', steps: 12, batch: 2, seqLen: 16, precision: 'f16', seed: 5 },
      randomTokens(4096, 7),
    ],
  ] as const) {
    it(`${label}: the same losses, scales, skips and parameters as the host's decision`, async () => {
      const device = await trajectory({ ...spec, lossScaling: 'device' }, data, 12);
      const host = await trajectory({ ...spec, lossScaling: 'host' }, data, 12);
      assert.deepEqual(device.out, host.out);
      assert.deepEqual(device.params, host.params);
      // Not trivially: steps were skipped (the step count lags), the scale grew and backed off.
      const steps = device.out.map((s) => s.optimizerSteps);
      assert.ok(steps[11]! < 12 && steps[11]! > 0, `optimizer steps ${steps.join(',')}`);
      const scales = device.out.map((s) => s.scale);
      assert.ok(
        scales.some((s, i) => i > 0 && s > scales[i - 1]!),
        `the scale never grew: ${scales.join(',')}`,
      );
      assert.ok(scales[0]! < START.scale, 'the first step did not overflow');
    });
  }

  it('a recorded fp16 step (staticStep) replays the same losses, scales, skips and parameters', async () => {
    const spec: TrainSpec = {
      model: 'mlp',
      steps: 12,
      batch: 8,
      precision: 'f16',
      seed: 3,
      lr: 3e-3,
      warmupSteps: 3,
    };
    const data = randomImages(64, 2);
    const run = async (staticStep: boolean) => {
      const t = newTrainer({ ...spec, staticStep }, data);
      t.restoreScaler(START);
      const losses: number[] = [];
      await t.run((r) => losses.push(r.loss));
      await t.syncState();
      const params = await Promise.all(t.optimizer.params.map(async (p) => Array.from(await p.values())));
      const out = { losses, state: t.scalerState(), steps: t.optimizer.steps, params };
      t.dispose();
      return out;
    };
    const replayed = await run(true);
    const plain = await run(false);
    assert.deepEqual(replayed, plain);
    assert.ok(plain.steps < 12 && plain.steps > 3, `optimizer steps ${plain.steps}: no skip, or no step`);
  });

  it('a checkpoint at step 5 resumes with the device scale, tracker and step count', async () => {
    const spec: TrainSpec = { model: 'mlp', steps: 9, batch: 8, precision: 'f16', seed: 3, lr: 3e-3 };
    const data = randomImages(64, 2);
    const run = async (
      t: Trainer,
      from = 0,
      boundary?: (s: number) => Promise<void>,
      signal?: AbortSignal,
    ) => {
      const losses: number[] = [];
      await t.run((r) => losses.push(r.loss), signal, from, boundary);
      return losses;
    };
    const straightT = newTrainer(spec, data);
    straightT.restoreScaler(START);
    const straight = await run(straightT);
    await straightT.syncState();
    const final = { state: straightT.scalerState(), steps: straightT.optimizer.steps };
    straightT.dispose();
    const first = newTrainer(spec, data);
    first.restoreScaler(START);
    const stop = new AbortController();
    await run(
      first,
      0,
      async (s) => {
        if (s === 5) {
          await saveCheckpoint(first, join(dir, 'amp'), s);
          stop.abort();
        }
      },
      stop.signal,
    );
    first.dispose();
    const resumed = newTrainer(spec, data);
    assert.equal(await loadCheckpoint(resumed, latestCheckpoint(join(dir, 'amp'))!), 5);
    assert.deepEqual(await run(resumed, 5), straight.slice(5));
    await resumed.syncState();
    assert.deepEqual({ state: resumed.scalerState(), steps: resumed.optimizer.steps }, final);
    assert.ok(final.steps < 9, `no step was skipped (${final.steps})`);
    resumed.dispose();
  });
});
