import { TandemError } from './errors.js';
import { decodeHalves, encodeHalves } from './half.js';

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

export { bf16ToF32, f16ToF32, f32ToBf16, f32ToF16 } from './half.js';

/** Converts stored elements to plain numbers (decoding f16/bf16). */
export function toNumbers(dtype: DType, data: HostArray): Float64Array {
  const out = new Float64Array(data.length);
  if (dtype === 'f16' || dtype === 'bf16') decodeHalves(dtype, data as Uint16Array, out);
  else out.set(data);
  return out;
}

/** Encodes numbers into storage for `dtype` (rounding to f16/bf16, truncating to integers). */
export function fromNumbers(dtype: DType, values: ArrayLike<number>, out: HostArray): void {
  if (dtype === 'f16' || dtype === 'bf16') encodeHalves(dtype, values, out as Uint16Array);
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
