/**
 * Real data, real training on the CPU runtime: the Fashion-MNIST MLP (784-512-512-10, AdamW, f32)
 * reaches ≥ 85 % accuracy on the 10,000 test images within CI's time. Skips, saying why, when Debian's
 * dataset-fashion-mnist is not installed.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { it } from 'node:test';
import { FASHION_MNIST_DIR, loadFashionMnist } from '../../src/nn/data/idx.js';
import { evaluateClassifier } from '../../src/nn/evaluate.js';
import { Trainer } from '../../src/nn/train.js';
import { cpuRuntime } from '../runtime/helpers.js';

const present = existsSync(`${FASHION_MNIST_DIR}/train-images-idx3-ubyte.gz`);

void it(
  'the Fashion-MNIST MLP reaches ≥ 85 % test accuracy on the CPU',
  { timeout: 600_000, skip: present ? false : `no ${FASHION_MNIST_DIR} (apt install dataset-fashion-mnist)` },
  async () => {
    const data = await loadFashionMnist();
    assert.equal(data.train.count, 60_000);
    assert.equal(data.test.count, 10_000);
    const rt = await cpuRuntime();
    try {
      const t0 = performance.now();
      const trainer = new Trainer(
        rt,
        { model: 'mlp', steps: 700, batch: 128, lr: 1e-3, seed: 1, device: 'cpu' },
        { kind: 'images', train: data.train, test: data.test },
      );
      const last = await trainer.run();
      assert.equal(trainer.built.kind, 'classifier');
      if (trainer.built.kind !== 'classifier') return;
      const score = await evaluateClassifier(trainer.nn, trainer.built.model, data.test);
      const s = ((performance.now() - t0) / 1000).toFixed(1);
      console.log(
        `# fashion-mnist mlp: ${(score.accuracy * 100).toFixed(2)} % test accuracy after 700 steps of 128 (${s} s, last loss ${last?.loss.toFixed(4)})`,
      );
      assert.equal(score.count, 10_000);
      assert.ok(score.accuracy >= 0.85, `test accuracy ${score.accuracy}`);
    } finally {
      await rt.close();
    }
  },
);
