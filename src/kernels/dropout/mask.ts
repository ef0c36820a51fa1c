/**
 * Dropout's random stream, in philox_fill's counter layout: element e = offset + i uses word e mod 4 of
 * the Philox4x32-10 block with counter (g mod 2^32, 0, floor(g / 2^32), 0), g = floor(e / 4), and key
 * keyFromSeed(seed) — i.e. `philox_fill` with first = g, block = 0, k0/k1 = the seed's halves. Four
 * consecutive elements share one Philox evaluation on every backend.
 */
import { keyFromSeed, philox4x32 } from '../mc_common/philox.js';

/** Calls `each(i, word)` for i in [0, n) with the element's 32-bit Philox word. */
export function forDropoutWords(
  seed: number,
  offset: number,
  n: number,
  each: (i: number, word: number) => void,
): void {
  const key = keyFromSeed(seed);
  const words = new Uint32Array(4);
  let group = -1;
  for (let i = 0; i < n; i++) {
    const e = offset + i;
    const g = Math.floor(e / 4);
    if (g !== group) {
      philox4x32(g % 2 ** 32, 0, Math.floor(g / 2 ** 32), 0, key.k0, key.k1, words);
      group = g;
    }
    each(i, words[e % 4]!);
  }
}

/** keep[i] = 1 when element i survives (23-bit word ≥ the integer threshold of dropoutParams). */
export function dropoutKeepMask(seed: number, offset: number, n: number, threshold: number): Uint8Array {
  const keep = new Uint8Array(n);
  forDropoutWords(seed, offset, n, (i, word) => {
    keep[i] = word >>> 9 >= threshold ? 1 : 0;
  });
  return keep;
}
