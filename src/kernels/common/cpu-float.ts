/**
 * CPU helpers that let one loop serve every floating dtype: f32/f64 data is used in place, f16/bf16
 * (stored as raw Uint16 words) is decoded chunk by chunk into f32 scratch and encoded back, so the
 * 16-bit types compute in f32 without a full-size temporary.
 */
import { type DType, f16ToF32 } from '../../core/dtype.js';
import type { CpuArg } from '../../devices/cpu/kernel-api.js';

export type FloatArray = Float32Array | Float64Array;

/** Elements per scratch chunk: 16 KiB of f32, small enough to stay in L1/L2 between decode and encode. */
const CHUNK = 4096;

export function isHalf(dtype: DType): boolean {
  return dtype === 'f16' || dtype === 'bf16';
}

let f16Table: Float32Array | null = null;

/** All 65536 f16 values decoded once per thread: a table lookup is far cheaper than bit arithmetic. */
function f16DecodeTable(): Float32Array {
  if (f16Table === null) {
    f16Table = new Float32Array(65536);
    for (let h = 0; h < 65536; h++) f16Table[h] = f16ToF32(h);
  }
  return f16Table;
}

/** Decodes `src` (f16 or bf16 words) into `dst`. */
export function decodeHalf(dtype: DType, src: Uint16Array, dst: Float32Array): void {
  const n = src.length;
  if (dtype === 'bf16') {
    // bf16 is the top half of an f32: shifting the word into place is the exact conversion.
    const bits = new Uint32Array(dst.buffer, dst.byteOffset, n);
    for (let i = 0; i < n; i++) bits[i] = src[i]! << 16;
  } else {
    const table = f16DecodeTable();
    for (let i = 0; i < n; i++) dst[i] = table[src[i]!]!;
  }
}

/** Encodes `src` into f16/bf16 words in `dst`, rounding to nearest even (NaN stays NaN). */
export function encodeHalf(dtype: DType, src: Float32Array, dst: Uint16Array): void {
  const n = dst.length;
  if (dtype === 'bf16') {
    const bits = new Uint32Array(src.buffer, src.byteOffset, n);
    for (let i = 0; i < n; i++) {
      const b = bits[i]!;
      if ((b & 0x7f800000) === 0x7f800000 && (b & 0x7fffff) !== 0) dst[i] = 0x7fc0 | ((b >>> 16) & 0x8000);
      else dst[i] = ((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) & 0xffff;
    }
  } else {
    encodeF16(new Uint32Array(src.buffer, src.byteOffset, n), dst);
  }
}

/**
 * f32 bits -> f16 words, round to nearest even: core's f32ToF16 inlined over a whole array (no call and
 * no scratch store per element, about 3x faster). test/kernels/half.test.ts checks them bit for bit.
 */
function encodeF16(bits: Uint32Array, dst: Uint16Array): void {
  for (let i = 0; i < dst.length; i++) {
    const b = bits[i]!;
    const sign = (b >>> 16) & 0x8000;
    const exp = (b >>> 23) & 0xff;
    let mant = b & 0x7fffff;
    if (exp === 0xff) {
      dst[i] = sign | 0x7c00 | (mant !== 0 ? 0x200 : 0);
      continue;
    }
    const e = exp - 112; // exp - 127 + 15
    if (e >= 0x1f) {
      dst[i] = sign | 0x7c00;
    } else if (e <= 0) {
      if (e < -10) {
        dst[i] = sign;
        continue;
      }
      mant |= 0x800000;
      const shift = 14 - e;
      let half = mant >>> shift;
      const rem = mant & ((1 << shift) - 1);
      const mid = 1 << (shift - 1);
      if (rem > mid || (rem === mid && (half & 1) === 1)) half++;
      dst[i] = sign | half;
    } else {
      let half = (e << 10) | (mant >>> 13);
      const rem = mant & 0x1fff;
      if (rem > 0x1000 || (rem === 0x1000 && (half & 1) === 1)) half++;
      dst[i] = sign | half;
    }
  }
}

/** A float view of a whole tensor: the data itself for f32/f64, a decoded f32 copy for f16/bf16. */
export function floatCopyOf(arg: CpuArg): FloatArray {
  if (!isHalf(arg.desc.dtype)) return arg.data as FloatArray;
  const out = new Float32Array(arg.data.length);
  decodeHalf(arg.desc.dtype, arg.data as Uint16Array, out);
  return out;
}

/** Stores `values` into `arg` when `arg` is 16-bit (f32/f64 args were written in place). */
export function storeFloat(arg: CpuArg, values: FloatArray): void {
  if (isHalf(arg.desc.dtype)) encodeHalf(arg.desc.dtype, values as Float32Array, arg.data as Uint16Array);
}

export type ChunkBody = (views: readonly FloatArray[], length: number) => void;

/**
 * Runs `body` over all `n` elements of same-length float tensors. `read[i]` says whether arg i's values
 * are inputs (decoded for 16-bit types); `write[i]` whether body writes it (encoded back afterwards).
 */
export function forFloatChunks(
  args: readonly CpuArg[],
  read: readonly boolean[],
  write: readonly boolean[],
  body: ChunkBody,
): void {
  const n = args[0]!.data.length;
  if (!args.some((a) => isHalf(a.desc.dtype))) {
    body(
      args.map((a) => a.data as FloatArray),
      n,
    );
    return;
  }
  const scratch = args.map((a) => (isHalf(a.desc.dtype) ? new Float32Array(Math.min(CHUNK, n)) : null));
  for (let start = 0; start < n; start += CHUNK) {
    const len = Math.min(CHUNK, n - start);
    const views = args.map((a, i) => {
      const s = scratch[i];
      if (s === null || s === undefined) return (a.data as FloatArray).subarray(start, start + len);
      const v = s.subarray(0, len);
      if (read[i]) decodeHalf(a.desc.dtype, (a.data as Uint16Array).subarray(start, start + len), v);
      return v;
    });
    body(views, len);
    args.forEach((a, i) => {
      if (write[i] && scratch[i]) {
        encodeHalf(
          a.desc.dtype,
          views[i] as Float32Array,
          (a.data as Uint16Array).subarray(start, start + len),
        );
      }
    });
  }
}
