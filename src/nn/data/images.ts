/** Labelled image sets in memory (Fashion-MNIST and the like) and seeded batches of them. */
import { TandemError } from '../../core/errors.js';
import { unitAt } from '../../core/seeded-random.js';

export interface ImageSet {
  /** count × height × width values in [0, 1], one channel. */
  readonly images: Float32Array;
  readonly labels: Int32Array;
  readonly count: number;
  readonly height: number;
  readonly width: number;
}

/**
 * Throws TANDEM_ERR_BAD_DATA unless `set` holds `count` images of `pixels` values and a label in
 * [0, classes) for each: a count past the data read past the arrays' ends (batches of undefined), and a
 * label past the classes made the loss NaN (reported as an unstable run, not as bad data).
 */
export function checkImageSet(set: ImageSet, pixels: number, classes: number): void {
  const bad = (message: string): TandemError => new TandemError('TANDEM_ERR_BAD_DATA', `images: ${message}`);
  if (!Number.isInteger(set.count) || set.count < 0) throw bad(`count ${set.count} is not a count`);
  if (set.height * set.width !== pixels)
    throw bad(`images are ${set.height}×${set.width}, the model takes ${pixels} pixels`);
  if (set.images.length < set.count * pixels)
    throw bad(`${set.images.length} values hold fewer than ${set.count} images of ${pixels} pixels`);
  if (set.labels.length < set.count) throw bad(`${set.labels.length} labels for ${set.count} images`);
  for (let i = 0; i < set.count; i++) {
    const l = set.labels[i]!;
    if (!(l >= 0 && l < classes)) throw bad(`label ${l} of image ${i} is not a class in [0, ${classes})`);
  }
}

/**
 * Batch `index` of a seeded shuffle: each epoch is a permutation of the images (a function of the seed
 * and the epoch, so a resumed run sees the same order); the last partial batch of an epoch is dropped.
 */
export function imageBatch(
  set: ImageSet,
  batch: number,
  index: number,
  seed: number,
): { images: Float32Array; labels: Int32Array } {
  const indices = imageBatchIndices(set.count, batch, index, seed);
  const px = set.height * set.width;
  const images = new Float32Array(batch * px);
  const labels = new Int32Array(batch);
  for (let i = 0; i < batch; i++) {
    const j = indices[i]!;
    images.set(set.images.subarray(j * px, (j + 1) * px), i * px);
    labels[i] = set.labels[j]!;
  }
  return { images, labels };
}

/** Which images (of `count`) make up imageBatch's batch `index`, in order. */
export function imageBatchIndices(count: number, batch: number, index: number, seed: number): Int32Array {
  const perEpoch = Math.floor(count / batch);
  const order = epochOrder(count, seed, Math.floor(index / perEpoch));
  const first = (index % perEpoch) * batch;
  return Int32Array.from(order.subarray(first, first + batch));
}

/**
 * The order in which imageBatch visits a set of `count` images in epoch `epoch` (from 0): a permutation
 * of 0..count−1 whose first ⌊count / batch⌋ · batch entries are that epoch's batches, in turn. Exported so
 * that another framework (the PyTorch baseline of bench/fashion.ts) can train on exactly the same batches.
 */
export function epochOrder(count: number, seed: number, epoch: number): Uint32Array {
  return permutation(count, seed + epoch * 7919);
}

const cache = new Map<string, Uint32Array>();

/** Fisher–Yates with a counter-based generator (cached per (n, seed): one epoch reuses it). */
function permutation(n: number, seed: number): Uint32Array {
  const key = `${n}:${seed}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const p = new Uint32Array(n);
  for (let i = 0; i < n; i++) p[i] = i;
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(unitAt(seed, i) * (i + 1));
    const t = p[i]!;
    p[i] = p[j]!;
    p[j] = t;
  }
  if (cache.size > 4) cache.clear();
  cache.set(key, p);
  return p;
}
