/**
 * An output tensor's values as a served model hands them to the HTTP layer: kept as a typed array until
 * the answer is written, so a binary answer (src/service/http/binary-tensors.ts) sends the bytes as they
 * are, while a JSON answer gets them through `toJSON` as JSON numbers or base64 of little-endian float32
 * (the model's `outputEncoding`).
 */
import { endianness } from 'node:os';
import { TandemError } from '../../core/errors.js';

export type ValuesEncoding = 'json' | 'base64';

const LITTLE_ENDIAN = endianness() === 'LE';

/** Values as little-endian float32 bytes (a view of a float32 array's memory where the host is little-endian). */
export function float32LEBytes(values: Float32Array | Float64Array): Buffer {
  const f32 = values instanceof Float32Array ? values : Float32Array.from(values);
  if (LITTLE_ENDIAN) return Buffer.from(f32.buffer, f32.byteOffset, f32.byteLength);
  const out = Buffer.allocUnsafe(f32.length * 4);
  for (let i = 0; i < f32.length; i++) out.writeFloatLE(f32[i]!, i * 4);
  return out;
}

/**
 * Little-endian float32 bytes as a Float32Array: one memcpy on little-endian hosts (a readFloatLE loop
 * cost ~10 ms for a 640×640×3 image on the event loop), or with `view` no copy at all when the bytes
 * start at a multiple of 4 (then the array shares, and keeps alive, the bytes' memory).
 */
export function float32FromLE(bytes: Uint8Array, opts: { view?: boolean } = {}): Float32Array {
  const n = Math.floor(bytes.length / 4);
  if (LITTLE_ENDIAN && opts.view === true && bytes.byteOffset % 4 === 0)
    return new Float32Array(bytes.buffer, bytes.byteOffset, n);
  if (LITTLE_ENDIAN) return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + n * 4));
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = view.getFloat32(i * 4, true);
  return out;
}

/** The most values an output is written with as JSON numbers (base64: four times as many). */
export const MAX_JSON_NUMBERS = 1 << 24;

export class TensorValues {
  constructor(
    readonly values: Float32Array | Float64Array,
    private readonly encoding: ValuesEncoding,
    /** The output's name, for the message when its values cannot be written as JSON numbers. */
    private readonly name = '',
  ) {}

  /**
   * The JSON form: an array of numbers, or base64 of little-endian float32. JSON has no NaN or
   * Infinity (JSON.stringify writes null), so non-finite values as numbers throw TANDEM_ERR_UNSTABLE
   * (422) for this answer alone; base64 and binary answers carry them as they are.
   */
  toJSON(): number[] | string {
    const v = this.values;
    // A JSON answer is one string, which V8 caps at 2^29 characters: ~2^24 numbers, ~2^26 in base64.
    // Past that the answer cannot be written (and a JS array of 10^8 numbers costs GBs on the way).
    const most = this.encoding === 'json' ? MAX_JSON_NUMBERS : MAX_JSON_NUMBERS * 4;
    if (v.length > most)
      throw new TandemError(
        'TANDEM_ERR_LIMIT',
        `output${this.name ? ` '${this.name}'` : ''} has ${v.length} values, more than a JSON answer holds (${most} as ${this.encoding === 'json' ? 'numbers' : 'base64'}); ask binaryOutputs`,
        { output: this.name, values: v.length, limit: most },
      );
    if (this.encoding !== 'json') return float32LEBytes(v).toString('base64');
    for (let i = 0; i < v.length; i++) {
      if (v[i]! - v[i]! !== 0)
        throw new TandemError(
          'TANDEM_ERR_UNSTABLE',
          `output${this.name ? ` '${this.name}'` : ''} is not finite (data[${i}] = ${v[i]}); JSON numbers cannot carry it (binaryOutputs or outputEncoding base64 can)`,
          { output: this.name, index: i },
        );
    }
    return Array.from(v);
  }

  /** The binary form: little-endian float32 bytes. */
  bytes(): Buffer {
    return float32LEBytes(this.values);
  }
}
