/**
 * Seeded pseudo-random numbers for test data, benchmark inputs and job inputs: reproducible from a
 * seed, fast, and not for anything that needs unpredictability.
 *
 * One generator, mulberry32: a counter (a Weyl sequence, seed + i·STEP mod 2^32) put through a 32-bit
 * mix. Because value i depends on the counter alone, it can be computed directly (`bitsAt`) as well as
 * one after another (`seededRandom`), with the same numbers either way: a worker can make elements
 * first..last of a stream next to its data without making the ones before them.
 */

/** mulberry32's counter step (odd, so the counter visits all 2^32 values). */
const STEP = 0x6d2b79f5;

/** mulberry32's output function: the counter value `t` mixed into 32 random bits (unsigned). */
function mix(t: number): number {
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return (t ^ (t >>> 14)) >>> 0;
}

/** Value `index` (from 0) of the stream of `seed` as 32 unsigned bits. */
export function bitsAt(seed: number, index: number): number {
  return mix((seed + Math.imul(index + 1, STEP)) >>> 0);
}

/** Value `index` (from 0) of the stream of `seed`, uniform in [0, 1): the (index+1)-th seededRandom(seed)(). */
export function unitAt(seed: number, index: number): number {
  return bitsAt(seed, index) / 2 ** 32;
}

/** The stream of `seed` one value at a time, uniform in [0, 1). */
export function seededRandom(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + STEP) >>> 0;
    return mix(s) / 2 ** 32;
  };
}

/**
 * Fills `out` with values first.. of the stream of `seed`, uniform in [lo, hi) and never exactly zero
 * (a zero input hides bugs: a kernel that skips an element still matches). A zero draw becomes hi / 2,
 * so [lo, hi) should not be one-sided at zero with hi = 0.
 */
export function fillRandom<T extends Float32Array | Float64Array>(
  out: T,
  seed: number,
  lo = -1,
  hi = 1,
  first = 0,
): T {
  const width = hi - lo;
  for (let i = 0; i < out.length; i++) out[i] = lo + width * unitAt(seed, first + i) || hi / 2;
  return out;
}
