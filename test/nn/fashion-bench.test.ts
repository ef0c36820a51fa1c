/**
 * The Fashion-MNIST benchmark against PyTorch (bench/fashion.ts, B.11) on the CPU: the order file PyTorch
 * reads is the Trainer's own batches; `prepare` writes it and the initial weights; `train` runs end to
 * end on a 2048-image slice, checks its initial weights against the file bit for bit (and refuses a
 * file that differs), and its compare line reads the other side's output. Skips the data-set parts,
 * saying why, when Debian's dataset-fashion-mnist is not installed.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, describe, it } from 'node:test';
import { FASHION_MNIST_DIR } from '../../src/nn/data/idx.js';
import { epochOrder, imageBatch, type ImageSet } from '../../src/nn/data/images.js';
import { loadSafetensors } from '../../src/nn/safetensors.js';

const run = promisify(execFile);
const BENCH = fileURLToPath(new URL('../../bench/fashion.js', import.meta.url));
const present = existsSync(`${FASHION_MNIST_DIR}/train-images-idx3-ubyte.gz`);
const skip = present ? false : `no ${FASHION_MNIST_DIR} (apt install dataset-fashion-mnist)`;
const SLICE = ['--train-limit', '2048', '--test-limit', '1000', '--epochs', '1'];

type Line = Record<string, unknown> & { event: string };
const linesOf = (stdout: string): Line[] =>
  stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Line);
const only = (lines: Line[], event: string): Line => {
  const found = lines.filter((l) => l.event === event);
  assert.equal(found.length, 1, `one ${event} line in ${JSON.stringify(lines)}`);
  return found[0]!;
};

void describe('bench/fashion', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tandem-fashion-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  void it('epochOrder lists the images of the batches imageBatch hands out, epoch after epoch', () => {
    // 23 images whose pixels encode their index: 4 batches of 5 per epoch, 3 left out.
    const n = 23;
    const set: ImageSet = {
      images: Float32Array.from({ length: n * 4 }, (_, i) => Math.floor(i / 4) + 0.25 * (i % 4)),
      labels: Int32Array.from({ length: n }, (_, i) => (i * 7) % 10),
      count: n,
      height: 2,
      width: 2,
    };
    for (let index = 0; index < 12; index++) {
      const epoch = Math.floor(index / 4);
      const order = epochOrder(n, 3, epoch);
      const b = imageBatch(set, 5, index, 3);
      for (let i = 0; i < 5; i++) {
        const j = order[(index % 4) * 5 + i]!;
        assert.equal(b.images[i * 4], j, `batch ${index} image ${i}`);
        assert.equal(b.labels[i], set.labels[j]);
      }
    }
    const first = [...epochOrder(n, 3, 0)];
    assert.deepEqual(
      [...first].sort((a, b) => a - b),
      Array.from({ length: n }, (_, i) => i),
    );
    assert.notDeepEqual([...epochOrder(n, 3, 1)], first, 'each epoch has its own shuffle');
  });

  void it(
    'prepare writes the batch order and the bf16 initial weights',
    { skip, timeout: 120_000 },
    async () => {
      const { stdout } = await run(process.execPath, [BENCH, 'prepare', '--out', dir, ...SLICE]);
      const p = only(linesOf(stdout), 'prepared');
      assert.equal(p['stepsPerEpoch'], 4);
      const order = new Uint32Array(readFileSync(join(dir, 'order.u32')).buffer.slice(0));
      assert.equal(order.length, 4 * 512);
      assert.deepEqual([...order], [...epochOrder(2048, 1, 0).subarray(0, 2048)]);
      const mlp = await loadSafetensors(join(dir, 'mlp-init.safetensors'));
      assert.deepEqual(mlp.tensors.get('fc1.weight')?.shape, [512, 784]);
      assert.equal(mlp.tensors.get('fc3.bias')?.dtype, 'BF16');
      const cnn = await loadSafetensors(join(dir, 'cnn-init.safetensors'));
      assert.deepEqual(cnn.tensors.get('conv2.weight')?.shape, [64, 32, 3, 3]);
    },
  );

  void it(
    'train runs a 2048-image epoch on the CPU from the prepared weights and compares with another run',
    {
      skip,
      timeout: 300_000,
    },
    async () => {
      const args = [BENCH, 'train', '--model', 'mlp', '--device', 'cpu', ...SLICE];
      const init = ['--init', join(dir, 'mlp-init.safetensors')];
      const first = await run(process.execPath, [...args, ...init]);
      const lines = linesOf(first.stdout);
      const losses = only(lines, 'first-steps')['losses'] as number[];
      assert.equal(losses.length, 4);
      // From the initial weights, 10 classes: the first loss is near ln 10; then it falls.
      assert.ok(Math.abs(losses[0]! - Math.log(10)) < 0.2, `first loss ${losses[0]}`);
      assert.ok(losses[3]! < losses[0]!, `losses ${losses.join(', ')}`);
      // Evaluated after every quarter of the 4-step epoch: steps 1, 2, 3 (eval lines), then 4 (epoch line).
      assert.deepEqual(
        lines.filter((l) => l.event === 'eval').map((l) => l['step']),
        [1, 2, 3],
      );
      const epoch = only(lines, 'epoch');
      assert.equal(epoch['epoch'], 1);
      const accuracy = epoch['testAccuracy'] as number;
      assert.ok(accuracy > 0.3 && accuracy <= 1, `accuracy ${accuracy} after 4 steps`);
      const final = only(lines, 'final');
      assert.equal(final['steps'], 4);
      assert.equal(final['testImages'], 1000);
      assert.equal(final['testAccuracy'], accuracy);
      assert.ok(
        (final['seconds'] as number) > 0 &&
          (final['secondsWithEval'] as number) > (final['seconds'] as number),
      );
      // The first run's output as the other side's: the same start and the same accuracy.
      const other = join(dir, 'other.jsonl');
      writeFileSync(other, first.stdout.replaceAll('"side":"tandem"', '"side":"torch"'));
      const second = await run(process.execPath, [...args, ...init, '--torch', other]);
      const cmp = only(linesOf(second.stdout), 'compare');
      assert.equal(cmp['firstLossTorch'], losses[0]);
      assert.ok((cmp['firstLossRelDiff'] as number) < 1e-6, JSON.stringify(cmp));
      assert.equal(cmp['firstLossOk'], true);
      assert.equal(cmp['accuracyOk'], true);
      assert.equal(cmp['timeToTargetRatio'], null, 'the 88 % target is not reached in 4 steps');
    },
  );

  void it(
    'train refuses initial weights that are not the ones it would start from',
    { skip, timeout: 120_000 },
    async () => {
      await assert.rejects(
        run(process.execPath, [
          BENCH,
          'train',
          '--model',
          'mlp',
          '--device',
          'cpu',
          ...SLICE,
          '--init',
          join(dir, 'cnn-init.safetensors'),
        ]),
        (e: Error & { stderr?: string }) => /initial fc1\.weight differs/.test(e.stderr ?? ''),
      );
    },
  );
});
