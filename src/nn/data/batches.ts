/**
 * Seeded, shuffled mini-batches over an image set: each epoch visits every image once in an order that
 * is a function of (seed, epoch) alone, so two runs with the same seed see the same batches and a
 * resumed run can start at any epoch. The last partial batch is kept unless `dropLast`.
 */
import { TandemError } from '../../core/errors.js';
import { unitAt } from '../../core/seeded-random.js';
import type { ImageSet } from './images.js';

export interface BatchOptions {
  /** Images per batch (integer ≥ 1). */
  readonly batchSize: number;
  /** Any integer; the order of each epoch is derived from it. */
  readonly seed: number;
  /** Which epoch's order (default 0). */
  readonly epoch?: number;
  /** Skip the last batch when it would be smaller than batchSize (default false). */
  readonly dropLast?: boolean;
}

export interface ImageBatch {
  /** count × height × width values, in the batch's order. */
  readonly images: Float32Array;
  readonly labels: Int32Array;
  readonly count: number;
  /** Which images of the set these are. */
  readonly indices: Uint32Array;
}

function requireInteger(name: string, v: number, min: number): void {
  if (!Number.isInteger(v) || v < min) {
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `batches: ${name} must be an integer ≥ ${min}, got ${v}`,
      {
        [name]: v,
      },
    );
  }
}

/** A permutation of 0..n-1 (Fisher–Yates on a counter-based generator keyed by seed and epoch). */
export function shuffledOrder(n: number, seed: number, epoch = 0): Uint32Array {
  const key = (Math.imul(seed | 0, 0x2545f491) ^ Math.imul(epoch + 1, 0x9e3779b9)) >>> 0;
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(unitAt(key, i) * (i + 1));
    const t = order[i]!;
    order[i] = order[j]!;
    order[j] = t;
  }
  return order;
}

/** Number of batches one epoch yields. */
export function batchesPerEpoch(count: number, batchSize: number, dropLast = false): number {
  return dropLast ? Math.floor(count / batchSize) : Math.ceil(count / batchSize);
}

/** The batches of one epoch, in order; each batch's arrays are fresh copies. */
export function* batches(set: ImageSet, options: BatchOptions): Generator<ImageBatch> {
  const { batchSize, seed, epoch = 0, dropLast = false } = options;
  requireInteger('batchSize', batchSize, 1);
  requireInteger('epoch', epoch, 0);
  if (!Number.isInteger(seed)) {
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `batches: seed must be an integer, got ${seed}`, {
      seed,
    });
  }
  const px = set.height * set.width;
  if (set.images.length !== set.count * px || set.labels.length !== set.count) {
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `batches: the set holds ${set.images.length} values and ${set.labels.length} labels, not ${set.count} images of ${set.height}x${set.width}`,
    );
  }
  const order = shuffledOrder(set.count, seed, epoch);
  const total = batchesPerEpoch(set.count, batchSize, dropLast);
  for (let b = 0; b < total; b++) {
    const indices = order.slice(b * batchSize, Math.min((b + 1) * batchSize, set.count));
    const count = indices.length;
    const images = new Float32Array(count * px);
    const labels = new Int32Array(count);
    for (let i = 0; i < count; i++) {
      const j = indices[i]!;
      images.set(set.images.subarray(j * px, (j + 1) * px), i * px);
      labels[i] = set.labels[j]!;
    }
    yield { images, labels, count, indices };
  }
}
