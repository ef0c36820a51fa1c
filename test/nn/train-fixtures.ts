/** Seeded random training data for the Trainer's tests: Fashion-sized images and byte tokens. */
import type { ImageSet } from '../../src/nn/data/images.js';
import type { TrainData } from '../../src/nn/train.js';
import { randomValues } from '../runtime/helpers.js';

/** `count` 28×28 images with values in (0, 1) and labels cycling over 10 classes. */
export function randomImages(count: number, seed: number): TrainData {
  const px = randomValues(count * 784, seed);
  const set: ImageSet = {
    images: Float32Array.from(px, (v) => (v + 1) / 2),
    labels: Int32Array.from({ length: count }, (_, i) => (i * 7 + seed) % 10),
    count,
    height: 28,
    width: 28,
  };
  return { kind: 'images', train: set };
}

/** `n` token ids in [0, 256) (a byte-level vocabulary: gpt-micro's). */
export function randomTokens(n: number, seed: number): TrainData {
  const r = randomValues(n, seed);
  return { kind: 'tokens', train: Int32Array.from(r, (v) => Math.floor(((v + 1) / 2) * 255.999)) };
}
