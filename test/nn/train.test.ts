/**
 * The training loop on the real CPU runtime: a byte-level GPT learns English from the Brown corpus
 * (the loss falls well below the uniform 5.55 nats), the loop stops on bad data with stable codes, and
 * a NaN loss stops the run naming the step.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isTandemError } from '../../src/core/errors.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { brownCorpusBytes } from '../../src/nn/data/corpus.js';
import { TokenLoader } from '../../src/nn/data/tokens.js';
import { Trainer, type StepReport } from '../../src/nn/train.js';
import { cpuRuntime } from '../runtime/helpers.js';

let rt: Runtime;
before(async () => {
  rt = await cpuRuntime();
});
after(async () => {
  await rt.close();
});

void describe('training a GPT on the CPU', () => {
  it(
    'a byte-level GPT on the Brown corpus: the loss falls from ln 256 to well below it',
    { timeout: 240_000 },
    async () => {
      const text = brownCorpusBytes(4);
      const trainer = new Trainer(
        rt,
        {
          model: 'gpt',
          preset: 'gpt-micro',
          steps: 80,
          batch: 8,
          seqLen: 32,
          lr: 3e-3,
          warmupSteps: 5,
          seed: 3,
        },
        { kind: 'tokens', train: text },
      );
      const reports: StepReport[] = [];
      await trainer.run((r) => reports.push(r));
      assert.equal(reports.length, 80);
      assert.deepEqual(
        reports.map((r) => r.step),
        Array.from({ length: 80 }, (_, i) => i + 1),
      );
      const first = reports[0]!.loss;
      const lastTen = reports.slice(-10).reduce((s, r) => s + r.loss, 0) / 10;
      console.log(
        `# byte-level gpt-micro: loss ${first.toFixed(3)} → ${lastTen.toFixed(3)} (mean of the last 10 steps)`,
      );
      assert.ok(Math.abs(first - Math.log(256)) < 0.3, `the first loss ${first} is near ln 256 = 5.55`);
      assert.ok(lastTen < 3.4, `the loss fell to ${lastTen}`);
      assert.ok(reports.every((r) => r.throughput > 0 && r.unit === 'tokens'));
    },
  );
});

void describe('bad training input', () => {
  it('data shorter than one batch, ids outside the vocabulary: TANDEM_ERR_BAD_DATA', () => {
    const short = new Uint8Array(100);
    assert.throws(
      () =>
        new Trainer(
          rt,
          { model: 'gpt', preset: 'gpt-micro', steps: 1, batch: 8, seqLen: 32 },
          { kind: 'tokens', train: short },
        ),
      (e) => isTandemError(e, 'TANDEM_ERR_BAD_DATA') && /one batch/.test(e.message),
    );
    assert.throws(
      () =>
        new TokenLoader(
          Uint16Array.from({ length: 100 }, (_, i) => i * 3),
          { batch: 2, time: 8, vocab: 256 },
        ),
      (e) => isTandemError(e, 'TANDEM_ERR_BAD_DATA') && /outside the vocabulary/.test(e.message),
    );
  });

  it('negative, fractional or NaN token ids; image sets whose sizes or labels do not fit: BAD_DATA', () => {
    // Before: -1 and a label of 99 trained into a NaN loss (reported UNSTABLE), NaN was read as id 0,
    // and a count past the data trained on batches read past the arrays' ends.
    for (const bad of [-1, 2.5, NaN]) {
      const ids = Float64Array.from({ length: 200 }, (_, i) => (i * 37) % 256);
      ids[150] = bad;
      assert.throws(
        () => new TokenLoader(ids, { batch: 2, time: 8, vocab: 256 }),
        (e) => isTandemError(e, 'TANDEM_ERR_BAD_DATA') && e.message.includes(`id ${bad} at 150`),
      );
    }
    const images = (count: number, stored = count) => ({
      count,
      height: 28,
      width: 28,
      images: Float32Array.from({ length: stored * 784 }, (_, i) => ((i * 7919) % 1000) / 1000),
      labels: Int32Array.from({ length: stored }, (_, i) => (i * 3) % 10),
    });
    const mlp = { model: 'mlp' as const, steps: 1, batch: 4 };
    const cases: Array<[string, ReturnType<typeof images>, RegExp]> = [
      ['a count past the data', images(1000, 16), /fewer than 1000 images of 784 pixels/],
      [
        'a label past the classes',
        { ...images(16), labels: Int32Array.from({ length: 16 }, (_, i) => (i === 9 ? 10 : 1)) },
        /label 10 of image 9/,
      ],
      ['a negative label', { ...images(16), labels: new Int32Array(16).fill(-3) }, /label -3 of image 0/],
      ['another image size', { ...images(16), height: 32, width: 32 }, /32×32, the model takes 784 pixels/],
    ];
    for (const [what, train, text] of cases)
      assert.throws(
        () => new Trainer(rt, mlp, { kind: 'images', train }),
        (e) => isTandemError(e, 'TANDEM_ERR_BAD_DATA') && text.test(e.message),
        what,
      );
    new Trainer(rt, mlp, { kind: 'images', train: images(16) }); // the same, well formed, is accepted
  });

  it('unknown model, preset, non-positive steps: TANDEM_ERR_INVALID_ARGUMENT', () => {
    const data = { kind: 'tokens', train: new Uint8Array(10_000) } as const;
    for (const spec of [
      { model: 'resnet' as 'gpt', steps: 1, batch: 1 },
      { model: 'gpt' as const, preset: 'gpt-huge', steps: 1, batch: 1 },
      { model: 'gpt' as const, preset: 'gpt-micro', steps: 0, batch: 1 },
    ])
      assert.throws(
        () => new Trainer(rt, spec, data),
        (e) => isTandemError(e, 'TANDEM_ERR_INVALID_ARGUMENT'),
      );
  });

  it('a NaN loss stops the run with TANDEM_ERR_UNSTABLE naming the step', async () => {
    const trainer = new Trainer(
      rt,
      { model: 'gpt', preset: 'gpt-micro', steps: 5, batch: 2, seqLen: 8, lr: 1e-3, seed: 1 },
      { kind: 'tokens', train: brownCorpusBytes(1) },
    );
    // Poison one weight: every loss from the first step on is NaN.
    const w = trainer.built.model.parameters()[0]!;
    const values = new Float32Array(w.data.size).fill(NaN);
    await rt.write(w.data, values);
    await assert.rejects(
      trainer.run(),
      (e) => isTandemError(e, 'TANDEM_ERR_UNSTABLE') && /step 1\b/.test(e.message),
    );
  });
});
