/** The seeded batch iterator: every image once per epoch, reproducible orders, dropLast, contents, bad options. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isTandemError } from '../../src/core/errors.js';
import { batches, batchesPerEpoch, shuffledOrder } from '../../src/nn/data/batches.js';
import type { ImageSet } from '../../src/nn/data/images.js';

/** 23 images of 2x3 whose pixels encode their index, label = index mod 10. */
const N = 23;
const set: ImageSet = {
  images: Float32Array.from({ length: N * 6 }, (_, i) => Math.floor(i / 6) + (i % 6) / 10),
  labels: Int32Array.from({ length: N }, (_, i) => i % 10),
  count: N,
  height: 2,
  width: 3,
};

const indicesOf = (opts: Parameters<typeof batches>[1]): number[][] =>
  [...batches(set, opts)].map((b) => [...b.indices]);

void describe('batches', () => {
  void it('visits every image exactly once per epoch, the last batch partial', () => {
    const got = indicesOf({ batchSize: 5, seed: 1 });
    assert.deepEqual(
      got.map((b) => b.length),
      [5, 5, 5, 5, 3],
    );
    assert.deepEqual(
      got.flat().sort((a, b) => a - b),
      Array.from({ length: N }, (_, i) => i),
    );
    assert.equal(batchesPerEpoch(N, 5), 5);
  });

  void it('dropLast leaves out the partial batch', () => {
    const got = indicesOf({ batchSize: 5, seed: 1, dropLast: true });
    assert.deepEqual(
      got.map((b) => b.length),
      [5, 5, 5, 5],
    );
    assert.deepEqual(got, indicesOf({ batchSize: 5, seed: 1 }).slice(0, 4));
    assert.equal(batchesPerEpoch(N, 5, true), 4);
  });

  void it('shuffles: the order is not the identity, and is the same for the same seed and epoch', () => {
    const a = indicesOf({ batchSize: 4, seed: 7 }).flat();
    assert.notDeepEqual(
      a,
      Array.from({ length: N }, (_, i) => i),
    );
    assert.deepEqual(indicesOf({ batchSize: 4, seed: 7 }).flat(), a);
    assert.notDeepEqual(indicesOf({ batchSize: 4, seed: 8 }).flat(), a);
    assert.notDeepEqual(indicesOf({ batchSize: 4, seed: 7, epoch: 1 }).flat(), a);
    assert.deepEqual([...shuffledOrder(N, 7, 0)], a);
  });

  void it('each batch holds the images and labels of its indices', () => {
    for (const b of batches(set, { batchSize: 6, seed: 3 })) {
      assert.equal(b.images.length, b.count * 6);
      b.indices.forEach((j, i) => {
        assert.equal(b.labels[i], j % 10);
        assert.deepEqual(
          [...b.images.subarray(i * 6, (i + 1) * 6)],
          [...set.images.subarray(j * 6, (j + 1) * 6)],
        );
      });
    }
  });

  void it('a batch larger than the set: one batch, or none with dropLast', () => {
    assert.deepEqual(
      indicesOf({ batchSize: 100, seed: 1 }).map((b) => b.length),
      [N],
    );
    assert.deepEqual(indicesOf({ batchSize: 100, seed: 1, dropLast: true }), []);
  });

  void it('bad options are TANDEM_ERR_INVALID_ARGUMENT', () => {
    for (const opts of [
      { batchSize: 0, seed: 1 },
      { batchSize: 2.5, seed: 1 },
      { batchSize: 2, seed: 0.5 },
      { batchSize: 2, seed: 1, epoch: -1 },
    ]) {
      assert.throws(
        () => [...batches(set, opts)],
        (e: unknown) =>
          isTandemError(e, 'TANDEM_ERR_INVALID_ARGUMENT') &&
          /^TANDEM_ERR_INVALID_ARGUMENT: batches: /.test(e.message),
      );
    }
  });

  void it('a set whose arrays disagree with its count is TANDEM_ERR_SHAPE', () => {
    assert.throws(
      () => [...batches({ ...set, count: N + 1 }, { batchSize: 2, seed: 1 })],
      (e: unknown) => isTandemError(e, 'TANDEM_ERR_SHAPE'),
    );
  });
});
