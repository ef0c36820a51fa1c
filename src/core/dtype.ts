import { TandemError } from './errors.js';

export const DTYPES = ['f32', 'f64', 'f16', 'bf16', 'i32', 'u8'] as const;
export type DType = (typeof DTYPES)[number];

export type HostArray = Float32Array | Float64Array | Uint16Array | Int32Array | Uint8Array;

const BYTES: Record<DType, number> = { f32: 4, f64: 8, f16: 2, bf16: 2, i32: 4, u8: 1 };

export function isDType(x: unknown): x is DType {
  return typeof x === 'string' && (DTYPES as readonly string[]).includes(x);
}

export function assertDType(x: unknown, what = 'dtype'): DType {
  if (!isDType(x)) {
    throw new TandemError(
      'TANDEM_ERR_DTYPE',
      `${what} must be one of ${DTYPES.join(', ')}, got ${JSON.stringify(x)}`,
    );
  }
  return x;
}

export function bytesPerElement(dtype: DType): number {
  return BYTES[dtype];
}

export function isFloat(dtype: DType): boolean {
  return dtype === 'f32' || dtype === 'f64' || dtype === 'f16' || dtype === 'bf16';
}

/**
 * A typed view over raw bytes. f16 and bf16 have no JS array type, so they are stored as raw
 * 16-bit words (Uint16Array); use `toNumbers`/`fromNumbers` to convert.
 */
export function hostView(
  dtype: DType,
  buffer: ArrayBufferLike,
  byteOffset: number,
  length: number,
): HostArray {
  switch (dtype) {
    case 'f32':
      return new Float32Array(buffer, byteOffset, length);
    case 'f64':
      return new Float64Array(buffer, byteOffset, length);
    case 'f16':
    case 'bf16':
      return new Uint16Array(buffer, byteOffset, length);
    case 'i32':
      return new Int32Array(buffer, byteOffset, length);
    case 'u8':
      return new Uint8Array(buffer, byteOffset, length);
  }
}

const f32Scratch = new Float32Array(1);
const u32Scratch = new Uint32Array(f32Scratch.buffer);

export function f32ToBf16(x: number): number {
  f32Scratch[0] = x;
  const bits = u32Scratch[0]!;
  if ((bits & 0x7f800000) === 0x7f800000 && (bits & 0x7fffff) !== 0) return 0x7fc0; // NaN stays NaN
  // round to nearest even
  const rounded = bits + 0x7fff + ((bits >>> 16) & 1);
  return (rounded >>> 16) & 0xffff;
}

export function bf16ToF32(h: number): number {
  u32Scratch[0] = (h & 0xffff) << 16;
  return f32Scratch[0]!;
}

export function f32ToF16(x: number): number {
  f32Scratch[0] = x;
  const bits = u32Scratch[0]!;
  const sign = (bits >>> 16) & 0x8000;
  const exp = (bits >>> 23) & 0xff;
  let mant = bits & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let half = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    if (rem > mid || (rem === mid && (half & 1) === 1)) half++;
    return sign | half;
  }
  let half = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (half & 1) === 1)) half++;
  e = half >>> 10;
  return sign | half;
}

export function f16ToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant === 0 ? sign * Infinity : NaN;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

/** Converts stored elements to plain numbers (decoding f16/bf16). */
export function toNumbers(dtype: DType, data: HostArray): Float64Array {
  const out = new Float64Array(data.length);
  if (dtype === 'f16') for (let i = 0; i < data.length; i++) out[i] = f16ToF32(data[i]!);
  else if (dtype === 'bf16') for (let i = 0; i < data.length; i++) out[i] = bf16ToF32(data[i]!);
  else for (let i = 0; i < data.length; i++) out[i] = data[i]!;
  return out;
}

/** Encodes numbers into storage for `dtype` (rounding to f16/bf16, truncating to integers). */
export function fromNumbers(dtype: DType, values: ArrayLike<number>, out: HostArray): void {
  if (dtype === 'f16') for (let i = 0; i < values.length; i++) out[i] = f32ToF16(values[i]!);
  else if (dtype === 'bf16') for (let i = 0; i < values.length; i++) out[i] = f32ToBf16(values[i]!);
  else for (let i = 0; i < values.length; i++) out[i] = values[i]!;
}

/** Unit roundoff per dtype, for tolerances in tests and result checks. */
export function epsilon(dtype: DType): number {
  switch (dtype) {
    case 'f64':
      return 2 ** -52;
    case 'f32':
      return 2 ** -23;
    case 'f16':
      return 2 ** -10;
    case 'bf16':
      return 2 ** -7;
    default:
      return 0;
  }
}
