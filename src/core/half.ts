/**
 * f16 and bf16 (stored as raw 16-bit words) to and from numbers: one element at a time, and whole
 * arrays. The array forms are what a model's inputs, outputs and weights go through, so they avoid the
 * per-element function call and scratch round trip: decoding reads a 64 Ki-entry table (every 16-bit
 * word has one value), encoding a Float32Array works on its bits through a Uint32Array view. Both give
 * exactly the per-element functions' results (round to nearest even; NaN stays NaN).
 */

const f32Scratch = new Float32Array(1);
const u32Scratch = new Uint32Array(f32Scratch.buffer);

/** bf16 bits of an f32's bits: round to nearest even; a NaN becomes the canonical quiet NaN. */
function bf16FromBits(bits: number): number {
  if ((bits & 0x7f800000) === 0x7f800000 && (bits & 0x7fffff) !== 0) return 0x7fc0;
  return ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16) & 0xffff;
}

/** f16 bits of an f32's bits: round to nearest even, subnormals included; overflow to ±Inf. */
function f16FromBits(bits: number): number {
  const sign = (bits >>> 16) & 0x8000;
  const exp = (bits >>> 23) & 0xff;
  const mant = bits & 0x7fffff;
  const e = exp - 127 + 15;
  // The common case first, without branches: adding 0xfff plus the kept part's lowest bit rounds to
  // nearest even, and a carry out of the mantissa moves into the exponent (up to Inf), as it should.
  if (e > 0 && e < 0x1f) return sign | ((e << 10) + ((mant + 0xfff + ((mant >>> 13) & 1)) >>> 13));
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 : 0);
  if (e >= 0x1f) return sign | 0x7c00;
  if (e < -10) return sign;
  // Subnormal f16: the implicit bit joins the mantissa, shifted further right.
  const full = mant | 0x800000;
  const shift = 14 - e;
  let half = full >>> shift;
  const rem = full & ((1 << shift) - 1);
  const mid = 1 << (shift - 1);
  if (rem > mid || (rem === mid && (half & 1) === 1)) half++;
  return sign | half;
}

export function f32ToBf16(x: number): number {
  f32Scratch[0] = x;
  return bf16FromBits(u32Scratch[0]!);
}

export function bf16ToF32(h: number): number {
  u32Scratch[0] = (h & 0xffff) << 16;
  return f32Scratch[0]!;
}

export function f32ToF16(x: number): number {
  f32Scratch[0] = x;
  return f16FromBits(u32Scratch[0]!);
}

export function f16ToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant === 0 ? sign * Infinity : NaN;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

export type HalfDType = 'f16' | 'bf16';

const tables: Partial<Record<HalfDType, Float32Array>> = {};

/** The value of every 16-bit word (256 KiB, made on first use). */
function decodeTable(dtype: HalfDType): Float32Array {
  let t = tables[dtype];
  if (!t) {
    t = new Float32Array(65536);
    const one = dtype === 'f16' ? f16ToF32 : bf16ToF32;
    for (let h = 0; h < 65536; h++) t[h] = one(h);
    tables[dtype] = t;
  }
  return t;
}

/** Decodes `data` (raw f16/bf16 words) into `out`, element for element. */
export function decodeHalves(dtype: HalfDType, data: Uint16Array, out: Float32Array | Float64Array): void {
  const n = data.length;
  if (dtype === 'bf16' && out instanceof Float32Array) {
    // A bf16 word is the top half of its f32: a shift, no table.
    const bits = new Uint32Array(out.buffer, out.byteOffset, n);
    for (let i = 0; i < n; i++) bits[i] = data[i]! << 16;
    return;
  }
  const table = decodeTable(dtype);
  for (let i = 0; i < n; i++) out[i] = table[data[i]!]!;
}

/** Encodes `values` into raw f16/bf16 words in `out` (each value rounded to f32 first, as f32ToF16). */
export function encodeHalves(dtype: HalfDType, values: ArrayLike<number>, out: Uint16Array): void {
  const n = values.length;
  if (values instanceof Float32Array) {
    const bits = new Uint32Array(values.buffer, values.byteOffset, n);
    if (dtype === 'f16') for (let i = 0; i < n; i++) out[i] = f16FromBits(bits[i]!);
    else for (let i = 0; i < n; i++) out[i] = bf16FromBits(bits[i]!);
    return;
  }
  if (dtype === 'f16') for (let i = 0; i < n; i++) out[i] = f32ToF16(values[i]!);
  else for (let i = 0; i < n; i++) out[i] = f32ToBf16(values[i]!);
}

/** Decoded into a new Float32Array. */
export function halvesToF32(dtype: HalfDType, data: Uint16Array): Float32Array {
  const out = new Float32Array(data.length);
  decodeHalves(dtype, data, out);
  return out;
}
