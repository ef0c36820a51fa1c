/**
 * DeviceImages (the training set kept on the device, each batch gathered there): its batches hold the
 * same pixels and labels as imageBatch's, in f32 and bf16, flat and NCHW; a Trainer with imagesOnDevice
 * takes exactly the same steps as one that copies batches from the host (same losses, bit for bit),
 * across an epoch boundary, for the MLP and the CNN.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fromNumbers, toNumbers } from '../../src/core/dtype.js';
import type { Observer } from '../../src/obs/observer.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { Nn } from '../../src/nn/context.js';
import { DeviceImages } from '../../src/nn/data/device-images.js';
import { imageBatch, type ImageSet } from '../../src/nn/data/images.js';
import { Trainer } from '../../src/nn/train.js';
import { cpuRuntime, randomValues } from '../runtime/helpers.js';

/** 40 random 28×28 images, labels 0..9. */
const N = 40;
const set: ImageSet = {
  images: Float32Array.from(randomValues(N * 784, 7), (v) => Math.abs(v) % 1),
  labels: Int32Array.from({ length: N }, (_, i) => (i * 3) % 10),
  count: N,
  height: 28,
  width: 28,
};

void describe('DeviceImages', () => {
  let rt: Runtime;
  before(async () => {
    rt = await cpuRuntime();
  });
  after(async () => {
    await rt.close();
  });

  void it('gathers the pixels and labels of imageBatch, in the working dtype', async () => {
    for (const precision of ['f32', 'bf16'] as const) {
      const nn = new Nn(rt, { precision, device: 'cpu' });
      const images = new DeviceImages(nn, set);
      for (const [index, flat] of [
        [0, true],
        [3, false],
        [5, true],
      ] as const) {
        const want = imageBatch(set, 8, index, 11);
        const b = images.batch(8, index, 11, flat);
        assert.deepEqual(b.x.shape, flat ? [8, 784] : [8, 1, 28, 28]);
        const encoded = new (precision === 'f32' ? Float32Array : Uint16Array)(want.images.length);
        fromNumbers(precision, want.images, encoded);
        assert.deepEqual(
          [...(await b.x.values())],
          [...toNumbers(precision, encoded)],
          `${precision} batch ${index}`,
        );
        assert.deepEqual([...(await b.y.values())], [...want.labels]);
        nn.release();
        for (const v of b.inputs) rt.free(v.data);
      }
      images.dispose();
    }
  });

  void it('a Trainer with imagesOnDevice takes the same steps as one that copies batches up', async () => {
    for (const model of ['mlp', 'cnn'] as const) {
      const losses = async (imagesOnDevice: boolean): Promise<{ losses: number[]; gathers: number }> => {
        const t = new Trainer(
          rt,
          { model, steps: 5, batch: 16, seed: 4, device: 'cpu', imagesOnDevice },
          { kind: 'images', train: set },
        );
        const out: number[] = [];
        let gathers = 0;
        const counter: Observer = { onTaskEnd: (e) => void (e.op === 'embedding' && gathers++) };
        rt.addObserver(counter);
        await t.run((r) => out.push(r.loss));
        await rt.idle();
        rt.removeObserver(counter);
        t.dispose();
        return { losses: out, gathers };
      };
      const host = await losses(false);
      const device = await losses(true);
      assert.equal(host.losses.length, 5);
      assert.ok(host.losses.every(Number.isFinite));
      // The device run gathered its batches (one per step, plus the upload's probe); the host run none.
      assert.equal(host.gathers, 0);
      assert.equal(device.gathers, 6);
      assert.deepEqual(device.losses, host.losses, model);
    }
  });
});
