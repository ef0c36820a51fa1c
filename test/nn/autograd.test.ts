/**
 * The autograd layer end to end on the real CPU runtime in float64: for small models, the gradients
 * that backward() writes equal central finite differences of the loss, element by element, for
 * parameters of every kind (linear weights and biases, layer norms, embeddings tied to the output,
 * attention, convolutions). Also: accumulation over two backward passes, noGrad, bad input.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isTandemError } from '../../src/core/errors.js';
import { seededRandom } from '../../src/core/seeded-random.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { Nn } from '../../src/nn/context.js';
import { Cnn, Mlp } from '../../src/nn/models/classifiers.js';
import { Gpt, gptConfig } from '../../src/nn/models/gpt.js';
import type { Var } from '../../src/nn/var.js';
import { cpuRuntime } from '../runtime/helpers.js';

let rt: Runtime;
before(async () => {
  rt = await cpuRuntime();
});
after(async () => {
  await rt.close();
});

/** Checks d(loss)/d(p[i]) for `samples` elements of every parameter against central differences. */
async function gradCheck(
  nn: Nn,
  params: readonly [string, Var][],
  lossOf: () => Var,
  samples = 3,
): Promise<void> {
  const loss = lossOf();
  await loss.backward();
  const analytic = new Map<Var, Float64Array>();
  for (const [, p] of params) analytic.set(p, await p.gradValues());
  nn.release();
  const rnd = seededRandom(11);
  const h = 1e-6;
  const evalLoss = async (): Promise<number> => {
    const l = nn.noGrad(lossOf);
    const v = await l.item();
    nn.release();
    return v;
  };
  for (const [name, p] of params) {
    const values = await p.values();
    for (let s = 0; s < samples; s++) {
      const i = Math.floor(rnd() * values.length);
      const orig = values[i]!;
      values[i] = orig + h;
      await rt.write(p.data, values);
      const up = await evalLoss();
      values[i] = orig - h;
      await rt.write(p.data, values);
      const down = await evalLoss();
      values[i] = orig;
      await rt.write(p.data, values);
      const fd = (up - down) / (2 * h);
      const got = analytic.get(p)![i]!;
      assert.ok(
        Math.abs(got - fd) <= 1e-6 + 1e-5 * Math.abs(fd),
        `${name}[${i}]: backward ${got}, finite difference ${fd}`,
      );
    }
  }
}

function randomImages(n: number, side: number, seed: number): Float64Array {
  const r = seededRandom(seed);
  return Float64Array.from({ length: n * side * side }, () => r());
}

function labels(n: number, classes: number, seed: number): Int32Array {
  const r = seededRandom(seed);
  return Int32Array.from({ length: n }, () => Math.floor(r() * classes));
}

void describe('autograd (f64 on the CPU runtime) against finite differences', () => {
  it('an MLP with ReLU: every weight and bias', async () => {
    const nn = new Nn(rt, { precision: 'f64', seed: 3 });
    const model = new Mlp(nn, { sizes: [12, 9, 7, 5] });
    const x = nn.input(randomImages(72, 1, 1), [6, 12]);
    const y = nn.input(labels(6, 5, 2), [6], 'i32');
    await gradCheck(nn, model.namedParameters(), () => model.loss(x, y));
  });

  it('a GPT (tied embeddings, fused residual + LayerNorm, causal attention, GELU)', async () => {
    const nn = new Nn(rt, { precision: 'f64', seed: 5 });
    const model = new Gpt(
      nn,
      gptConfig('gpt-micro', { width: 16, heads: 2, context: 8, vocab: 29, paddedVocab: 32 }),
    );
    const r = seededRandom(9);
    const ids = nn.input(
      Int32Array.from({ length: 2 * 7 }, () => Math.floor(r() * 29)),
      [2, 7],
      'i32',
    );
    const targets = nn.input(
      Int32Array.from({ length: 2 * 7 }, () => Math.floor(r() * 29)),
      [14],
      'i32',
    );
    await gradCheck(nn, model.namedParameters(), () => model.loss(ids, targets), 2);
  });

  it('a CNN (conv, ReLU, max-pool, flatten, linear)', async () => {
    const nn = new Nn(rt, { precision: 'f64', seed: 7 });
    const model = new Cnn(nn, 8, 3);
    const x = nn.input(randomImages(2, 8, 4), [2, 1, 8, 8]);
    const y = nn.input(labels(2, 3, 5), [2], 'i32');
    await gradCheck(nn, model.namedParameters(), () => model.loss(x, y), 2);
  });
});

void describe('autograd bookkeeping', () => {
  it('two backward passes without zeroGrad add their gradients; zeroGrad starts over', async () => {
    const nn = new Nn(rt, { precision: 'f64', seed: 3 });
    const model = new Mlp(nn, { sizes: [4, 3, 2] });
    const x = nn.input([0.5, -0.25, 0.75, 1, 0.1, 0.2, -0.3, 0.4], [2, 4]);
    const y = nn.input([1, 0], [2], 'i32');
    const w = model.layers[0]!.weight;
    await model.loss(x, y).backward();
    const once = await w.gradValues();
    await model.loss(x, y).backward();
    const twice = await w.gradValues();
    once.forEach((g, i) => assert.ok(Math.abs(twice[i]! - 2 * g) <= 1e-12 * Math.max(1, Math.abs(g))));
    nn.zeroGrad();
    await model.loss(x, y).backward();
    const again = await w.gradValues();
    once.forEach((g, i) => assert.ok(Math.abs(again[i]! - g) <= 1e-12 * Math.max(1, Math.abs(g))));
    assert.ok(
      once.some((g) => g !== 0),
      'the gradient is not all zeros',
    );
  });

  it('noGrad records nothing: backward on its result is a clear error', async () => {
    const nn = new Nn(rt, { precision: 'f64' });
    const model = new Mlp(nn, { sizes: [4, 2] });
    const x = nn.input([1, 2, 3, 4], [1, 4]);
    const y = nn.input([1], [1], 'i32');
    const loss = nn.noGrad(() => model.loss(x, y));
    assert.ok(Number.isFinite(await loss.item()));
    await assert.rejects(loss.backward(), (e) => isTandemError(e, 'TANDEM_ERR_INVALID_ARGUMENT'));
  });

  it('shape and dtype mismatches are TANDEM_ERR_SHAPE / _DTYPE before anything runs', () => {
    const nn = new Nn(rt, { precision: 'f64' });
    const model = new Mlp(nn, { sizes: [4, 2] });
    const x = nn.input([1, 2, 3], [1, 3]);
    const y = nn.input([1], [1], 'i32');
    assert.throws(
      () => model.loss(x, y),
      (e) => isTandemError(e, 'TANDEM_ERR_SHAPE'),
    );
    const x4 = nn.input([1, 2, 3, 4], [1, 4]);
    const yf = nn.input([1], [1], 'f64');
    assert.throws(
      () => model.loss(x4, yf),
      (e) => isTandemError(e, 'TANDEM_ERR_DTYPE'),
    );
    assert.throws(
      () => new Nn(rt, { precision: 'f8' as 'f32' }),
      (e) => isTandemError(e, 'TANDEM_ERR_INVALID_ARGUMENT'),
    );
    assert.throws(
      () => gptConfig('gpt-9000'),
      (e) => isTandemError(e, 'TANDEM_ERR_INVALID_ARGUMENT'),
    );
  });
});
