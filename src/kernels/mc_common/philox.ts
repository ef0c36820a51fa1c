/**
 * Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC11), the
 * counter-based generator of Random123, cuRAND and JAX. A (counter, key) pair maps to four 32-bit words
 * with no state, so any device can produce any part of the stream and the same seed gives the same
 * words on CPU, CUDA and WGSL.
 *
 * Stream convention shared by every backend (see risk/README in docs and the kernel sources):
 *   key     = (seed mod 2^32, floor(seed / 2^32))
 *   counter = (stream mod 2^32, block, floor(stream / 2^32), 0)
 * where `stream` is the path (or path group) index and `block` numbers the groups of four variates a
 * path draws (variates 4*block .. 4*block+3).
 */

const M0 = 0xd2511f53;
const M1 = 0xcd9e8d57;
const W0 = 0x9e3779b9;
const W1 = 0xbb67ae85;

/** High 32 bits of the 64-bit product a*b of two u32 (JS numbers are exact only to 2^53). */
function mulhi(a: number, b: number): number {
  // 16-bit halves: every partial product stays below 2^32 and the carries are integer shifts (about
  // twice as fast in V8 as splitting one operand and dividing by 2^16 in floating point).
  const al = a & 0xffff;
  const ah = a >>> 16;
  const bl = b & 0xffff;
  const bh = b >>> 16;
  const ll = al * bl;
  const m1 = ah * bl;
  const m2 = al * bh;
  const carry = ((ll >>> 16) + (m1 & 0xffff) + (m2 & 0xffff)) >>> 16;
  return (ah * bh + (m1 >>> 16) + (m2 >>> 16) + carry) >>> 0;
}

/**
 * One Philox4x32 evaluation with `rounds` rounds (10 for Philox4x32-10). Writes the four output words
 * into `out` (as unsigned 32-bit numbers).
 */
export function philox4x32(
  c0: number,
  c1: number,
  c2: number,
  c3: number,
  k0: number,
  k1: number,
  out: Uint32Array | number[],
  rounds = 10,
): void {
  let x0 = c0 >>> 0;
  let x1 = c1 >>> 0;
  let x2 = c2 >>> 0;
  let x3 = c3 >>> 0;
  let key0 = k0 >>> 0;
  let key1 = k1 >>> 0;
  for (let r = 0; r < rounds; r++) {
    if (r > 0) {
      key0 = (key0 + W0) >>> 0;
      key1 = (key1 + W1) >>> 0;
    }
    const hi0 = mulhi(M0, x0);
    const lo0 = Math.imul(M0, x0) >>> 0;
    const hi1 = mulhi(M1, x2);
    const lo1 = Math.imul(M1, x2) >>> 0;
    x0 = (hi1 ^ x1 ^ key0) >>> 0;
    x1 = lo1;
    x2 = (hi0 ^ x3 ^ key1) >>> 0;
    x3 = lo0;
  }
  out[0] = x0;
  out[1] = x1;
  out[2] = x2;
  out[3] = x3;
}

export interface PhiloxKey {
  readonly k0: number;
  readonly k1: number;
}

/** Seeds are integers in [0, 2^53): the low and high halves become the two key words. */
export function keyFromSeed(seed: number): PhiloxKey {
  return { k0: (seed % 2 ** 32) >>> 0, k1: Math.floor(seed / 2 ** 32) >>> 0 };
}

/** The four words of block `block` of stream `stream` under the shared counter convention. */
export function streamBlock(
  key: PhiloxKey,
  stream: number,
  block: number,
  out: Uint32Array | number[],
): void {
  philox4x32(stream % 2 ** 32, block, Math.floor(stream / 2 ** 32), 0, key.k0, key.k1, out);
}

/**
 * u32 -> uniform in (0, 1): (2*(x >> 9) + 1) * 2^-24. The result has 24 significant bits, so it is exact
 * in f32 and f64 alike (every backend gets the same uniform bit for bit) and is never 0 or 1, so
 * log(u) in Box–Muller is always finite.
 */
export function u32ToUniform(x: number): number {
  return ((x >>> 9) * 2 + 1) * 5.9604644775390625e-8;
}

const TWO_PI = 2 * Math.PI;

/**
 * Box–Muller on the four words of one Philox block: (u0, u1) -> z0, z1 and (u2, u3) -> z2, z3. The angle
 * is 2 pi (u - 1/2), in [-pi, pi), the range where the GPUs' fast sine and cosine are accurate.
 */
export function blockNormals(
  words: Uint32Array | readonly number[],
  out: Float64Array | number[],
  offset = 0,
): void {
  const r0 = Math.sqrt(-2 * Math.log(u32ToUniform(words[0]!)));
  const t0 = TWO_PI * (u32ToUniform(words[1]!) - 0.5);
  const r1 = Math.sqrt(-2 * Math.log(u32ToUniform(words[2]!)));
  const t1 = TWO_PI * (u32ToUniform(words[3]!) - 0.5);
  out[offset] = r0 * Math.cos(t0);
  out[offset + 1] = r0 * Math.sin(t0);
  out[offset + 2] = r1 * Math.cos(t1);
  out[offset + 3] = r1 * Math.sin(t1);
}

/** Normals 4*block .. 4*block+3 of a stream. */
export function streamNormals(
  key: PhiloxKey,
  stream: number,
  block: number,
  out: Float64Array | number[],
  scratch: Uint32Array,
): void {
  streamBlock(key, stream, block, scratch);
  blockNormals(scratch, out);
}
