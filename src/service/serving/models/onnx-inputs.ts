/**
 * One request's inputs for an ONNX model: named tensors `{name: {shape, data}}`, data as a JSON array
 * of numbers, a base64 string of little-endian float32, or (from a binary body) the raw bytes. With a
 * batchable model (every input's first dimension symbolic) an item's shape leaves the batch axis out,
 * as Triton's does (a leading 1 is also accepted); the concrete dimensions the file declares are
 * checked here, on the event loop. The input of the model's `preprocess` config may instead come as
 * uint8 pixels (`dtype: 'uint8'`, shape [H, W, 3]: JSON integers, base64 of the bytes, or the raw bytes
 * of a binary body), which the batch normalizes on the device (onnx-image.ts).
 */
import { TandemError } from '../../../core/errors.js';
import { isFloatType } from '../../../onnx/host-tensor.js';
import type { OnnxModel } from '../../../onnx/model.js';
import { float32FromLE } from '../tensor-values.js';

/** Largest tensor one request may carry (elements), so a request cannot ask for unbounded memory. */
export const MAX_REQUEST_ELEMENTS = 1 << 24;

/** An input's values: float32/float64, or (the preprocess input) uint8 pixels H×W×3. */
export type ItemData = Float32Array | Float64Array | Uint8Array;

export interface OnnxItem {
  /**
   * Per input: the item's dims without the batch axis (batchable) or in full, and its values; pixels
   * (a Uint8Array) are [H, W, 3] either way.
   */
  readonly tensors: ReadonlyMap<string, { dims: readonly number[]; data: ItemData }>;
  /** Items with the same key can be stacked into one run. */
  readonly key: string;
}

export function isBatchable(model: OnnxModel): boolean {
  return (
    model.inputs.length > 0 &&
    model.inputs.every((v) => v.dims !== null && v.dims.length > 0 && typeof v.dims[0] !== 'number')
  );
}

const bad = (
  message: string,
  code:
    | 'TANDEM_ERR_INVALID_ARGUMENT'
    | 'TANDEM_ERR_SHAPE'
    | 'TANDEM_ERR_LIMIT'
    | 'TANDEM_ERR_DTYPE' = 'TANDEM_ERR_INVALID_ARGUMENT',
) => new TandemError(code, `onnx inputs: ${message}`);

/** Largest finite float32: a JSON number past it would become Infinity in the Float32Array. */
const F32_MAX = 3.4028234663852886e38;

/** The index of the first value that is not a whole number within ±2^53 (an integer input); -1 if none. */
function firstNonInteger(data: Float32Array | Float64Array): number {
  for (let i = 0; i < data.length; i++) if (!Number.isSafeInteger(data[i])) return i;
  return -1;
}

function decodeData(name: string, data: unknown, n: number, float: boolean): Float32Array | Float64Array {
  // base64 in a JSON body, or the raw bytes of a binary body (src/service/http/binary-tensors.ts).
  if (typeof data === 'string' || data instanceof Uint8Array) {
    const bytes = typeof data === 'string' ? Buffer.from(data, 'base64') : data;
    if (bytes.length !== n * 4)
      throw bad(
        `'${name}': ${typeof data === 'string' ? 'base64' : 'binary'} data has ${bytes.length} bytes, the shape needs ${n * 4} (float32)`,
        'TANDEM_ERR_SHAPE',
      );
    const values = float32FromLE(bytes, { view: true });
    // A float input's NaN or ±Inf goes to the model as ONNX Runtime passes it (a JSON answer that would
    // carry a non-finite output is a 422 of its own); scanning every value of every image would cost
    // ~1.4 ms a 640×640×3 image on the lane's hot path. An integer input (indices, ids) must be whole.
    if (!float) {
      const at = firstNonInteger(values);
      if (at >= 0)
        throw bad(`'${name}'.data[${at}] is ${values[at]}, not a finite integer`, 'TANDEM_ERR_DTYPE');
    }
    return values;
  }
  if (!Array.isArray(data)) throw bad(`'${name}'.data must be an array of numbers or a base64 string`);
  if (data.length !== n)
    throw bad(`'${name}': data has ${data.length} values, the shape needs ${n}`, 'TANDEM_ERR_SHAPE');
  const out = float ? new Float32Array(n) : new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const v: unknown = data[i];
    if (typeof v !== 'number' || !Number.isFinite(v))
      throw bad(`'${name}'.data[${i}] is not a finite number`);
    // Silently Infinity in float32 otherwise; an integer input (indices, ids) must be a whole number.
    if (float && Math.abs(v) > F32_MAX)
      throw bad(`'${name}'.data[${i}] (${v}) does not fit in float32`, 'TANDEM_ERR_DTYPE');
    if (!float && !Number.isSafeInteger(v))
      throw bad(
        `'${name}'.data[${i}] (${v}) is not a whole number within ±2^53, as the input's integer type needs`,
        'TANDEM_ERR_DTYPE',
      );
    out[i] = v;
  }
  return out;
}

/** The dtypes a request's tensor may name; float32 when it names none. */
const DTYPES = ['float32', 'uint8'] as const;

/** Pixels [H, W, 3] (or [1, H, W, 3]) for an image input declared [N, 3, H, W]; returns [H, W, 3]. */
function pixelDims(name: string, shape: number[], declared: ReadonlyArray<number | string | null>): number[] {
  const dims = shape.length === 4 && shape[0] === 1 ? shape.slice(1) : shape;
  if (dims.length !== 3)
    throw bad(
      `'${name}': uint8 pixels must have shape [H, W, 3], got [${shape.join(', ')}]`,
      'TANDEM_ERR_SHAPE',
    );
  if (dims[2] !== 3)
    throw bad(`'${name}': the image has ${dims[2]} channels, the model takes 3 (RGB)`, 'TANDEM_ERR_SHAPE');
  const [h, w] = [declared[2], declared[3]];
  if ((typeof h === 'number' && h !== dims[0]) || (typeof w === 'number' && w !== dims[1]))
    throw bad(
      `'${name}': the model takes ${String(h ?? '?')}×${String(w ?? '?')} images, got ${dims[0]}×${dims[1]}`,
      'TANDEM_ERR_SHAPE',
    );
  return dims;
}

function decodePixels(name: string, data: unknown, n: number): Uint8Array {
  if (typeof data === 'string' || data instanceof Uint8Array) {
    const bytes = typeof data === 'string' ? Buffer.from(data, 'base64') : data;
    if (bytes.length !== n)
      throw bad(
        `'${name}': ${typeof data === 'string' ? 'base64' : 'binary'} data has ${bytes.length} bytes, the shape needs ${n} (uint8)`,
        'TANDEM_ERR_SHAPE',
      );
    return bytes;
  }
  if (!Array.isArray(data)) throw bad(`'${name}'.data must be an array of integers or a base64 string`);
  if (data.length !== n)
    throw bad(`'${name}': data has ${data.length} values, the shape needs ${n}`, 'TANDEM_ERR_SHAPE');
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    const v: unknown = data[i];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 255)
      throw bad(
        `'${name}'.data[${i}] (${String(v)}) is not a uint8 value (an integer 0..255)`,
        'TANDEM_ERR_DTYPE',
      );
    out[i] = v;
  }
  return out;
}

/**
 * One request's inputs. `imageInput`: the input of the model's preprocess config, which may come as
 * uint8 pixels.
 */
export function parseOnnxInputs(model: OnnxModel, inputs: unknown, imageInput?: string): OnnxItem {
  if (typeof inputs !== 'object' || inputs === null || Array.isArray(inputs))
    throw bad('inputs must be an object of named tensors {name: {shape, data}}');
  const given = inputs as Record<string, unknown>;
  for (const k of Object.keys(given))
    if (!model.inputs.some((v) => v.name === k))
      throw bad(`the model has no input '${k}' (it has ${model.inputs.map((v) => v.name).join(', ')})`);
  const batchable = isBatchable(model);
  const tensors = new Map<string, { dims: readonly number[]; data: ItemData }>();
  let total = 0;
  for (const info of model.inputs) {
    const t = given[info.name];
    if (typeof t !== 'object' || t === null)
      throw bad(`input '${info.name}' is missing (give {shape, data})`);
    const { shape, data, dtype } = t as { shape?: unknown; data?: unknown; dtype?: unknown };
    if (!Array.isArray(shape) || shape.some((d) => typeof d !== 'number' || !Number.isInteger(d) || d < 1))
      throw bad(`'${info.name}'.shape must be an array of positive integers`, 'TANDEM_ERR_SHAPE');
    if (dtype !== undefined && !(DTYPES as readonly unknown[]).includes(dtype))
      throw bad(
        `'${info.name}'.dtype must be one of ${DTYPES.join(', ')}, got ${JSON.stringify(dtype)}`,
        'TANDEM_ERR_DTYPE',
      );
    const declared = info.dims ?? [];
    if (dtype === 'uint8') {
      if (info.name !== imageInput)
        throw bad(
          `'${info.name}' takes float32 values; uint8 pixels are for the input of the model's preprocess config${imageInput ? ` ('${imageInput}')` : ' (it has none)'}`,
          'TANDEM_ERR_DTYPE',
        );
      const dims = pixelDims(info.name, shape as number[], declared);
      const n = dims[0]! * dims[1]! * 3;
      total += n;
      if (total > MAX_REQUEST_ELEMENTS)
        throw bad(`the request has more than ${MAX_REQUEST_ELEMENTS} elements`, 'TANDEM_ERR_LIMIT');
      tensors.set(info.name, { dims, data: decodePixels(info.name, data, n) });
      continue;
    }
    let dims = shape as number[];
    if (batchable && dims.length === declared.length) {
      if (dims[0] !== 1)
        throw bad(
          `'${info.name}': one request is one item; give the shape without the batch axis (or with a leading 1)`,
          'TANDEM_ERR_SHAPE',
        );
      dims = dims.slice(1);
    }
    const want = batchable ? declared.slice(1) : declared;
    if (
      info.dims &&
      (dims.length !== want.length || want.some((d, i) => typeof d === 'number' && d !== dims[i]))
    ) {
      throw bad(
        `'${info.name}' must have shape [${want.map((d) => (typeof d === 'number' ? d : '?')).join(', ')}]${batchable ? ' (batch axis left out)' : ''}, got [${dims.join(', ')}]`,
        'TANDEM_ERR_SHAPE',
      );
    }
    const n = dims.reduce((a, b) => a * b, 1);
    total += n;
    if (total > MAX_REQUEST_ELEMENTS)
      throw bad(`the request has more than ${MAX_REQUEST_ELEMENTS} elements`, 'TANDEM_ERR_LIMIT');
    tensors.set(info.name, { dims, data: decodeData(info.name, data, n, isFloatType(info.type)) });
  }
  return {
    tensors,
    key: [...tensors]
      .map(([k, v]) => `${k}:${v.data instanceof Uint8Array ? 'u8:' : ''}${v.dims.join('x')}`)
      .join('|'),
  };
}
