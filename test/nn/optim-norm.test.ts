/**
 * AdamW's step() computes the global gradient norm (a fill and one sum-of-squares task per parameter)
 * only when the update reads it: with clipping or the non-finite skip. Without, it submits no sumsq,
 * and the parameters come out bit for bit as with the norm computed; gradNorm() still gives the norm.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Observer } from '../../src/obs/observer.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { Nn } from '../../src/nn/context.js';
import { Mlp } from '../../src/nn/models/classifiers.js';
import { AdamW } from '../../src/nn/optim/adamw.js';
import { cpuRuntime, randomValues } from '../runtime/helpers.js';

void describe('AdamW and the gradient norm', () => {
  let rt: Runtime;
  before(async () => {
    rt = await cpuRuntime();
  });
  after(async () => {
    await rt.close();
  });

  /** 3 steps of a small MLP; `update` takes the optimizer's step. Returns parameters, norms, sumsq tasks. */
  async function train(
    maxNorm: number,
    update: (opt: AdamW) => Promise<number>,
  ): Promise<{ params: number[][]; norms: number[]; sumsq: number }> {
    const nn = new Nn(rt, { device: 'cpu', seed: 9 });
    const model = new Mlp(nn, { sizes: [6, 5, 3] });
    const opt = new AdamW(nn, model.parameters(), { lr: 0.05, maxNorm });
    let sumsq = 0;
    const counter: Observer = { onTaskEnd: (e) => void (e.op === 'sumsq' && sumsq++) };
    rt.addObserver(counter);
    const norms: number[] = [];
    for (let s = 0; s < 3; s++) {
      const x = nn.input(randomValues(4 * 6, 100 + s), [4, 6]);
      const y = nn.input([0, 2, 1, 2], [4], 'i32');
      await model.loss(x, y).backward();
      norms.push(await update(opt));
      opt.zeroGrad();
      rt.free(x.data);
      rt.free(y.data);
    }
    await rt.idle();
    rt.removeObserver(counter);
    const params = await Promise.all(model.parameters().map(async (p) => [...(await p.values())]));
    opt.dispose();
    return { params, norms, sumsq };
  }

  void it('without clipping, step() submits no sumsq and updates as with the norm computed', async () => {
    const lean = await train(0, async (opt) => {
      opt.step();
      return opt.gradNorm();
    });
    const full = await train(0, async (opt) => {
      opt.computeNorm();
      const norm = await opt.gradNorm();
      opt.applyUpdate();
      return norm;
    });
    // gradNorm() after the lean step computes the norm on demand: 4 parameters × 3 steps, as the full run.
    assert.equal(lean.sumsq, 12);
    assert.equal(full.sumsq, 12);
    assert.deepEqual(lean.params, full.params);
    assert.deepEqual(lean.norms, full.norms);
    assert.ok(lean.norms.every((n) => n > 0));
    const quiet = await train(0, (opt) => {
      opt.step();
      return Promise.resolve(0);
    });
    assert.equal(quiet.sumsq, 0, 'no sum of squares when nothing reads the norm');
    assert.deepEqual(quiet.params, full.params);
  });

  void it('with clipping, step() still computes the norm it clips with', async () => {
    const clipped = await train(0.01, (opt) => {
      opt.step();
      return Promise.resolve(0);
    });
    assert.equal(clipped.sumsq, 12);
    const unclipped = await train(0, (opt) => {
      opt.step();
      return Promise.resolve(0);
    });
    assert.notDeepEqual(clipped.params, unclipped.params, 'a 0.01 clip changes the updates');
  });
});
