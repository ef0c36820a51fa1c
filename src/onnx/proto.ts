// onnx-proto's declarations name protobufjs 6's global `Long` (from @types/long, a dependency of
// protobufjs 6): referenced here so a consumer's type check of Tandem's .d.ts finds it without
// skipLibCheck or a `types` entry of its own.
/// <reference types="long" preserve="true" />
/**
 * The ONNX protobuf schema (npm `onnx-proto`: protobufjs 6 static code generated from onnx.proto) and
 * the decoding of a message into its generated classes. Every decode failure becomes a TandemError:
 * protobufjs throws plain Errors (index out of range, invalid wire type) on bytes that are not ONNX.
 */
import onnxProto from 'onnx-proto';
import { TandemError } from '../core/errors.js';

export const onnx = onnxProto.onnx;
export type ModelProto = onnxProto.onnx.ModelProto;
export type GraphProto = onnxProto.onnx.IGraphProto;
export type NodeProto = onnxProto.onnx.INodeProto;
export type TensorProto = onnxProto.onnx.ITensorProto;
export type AttributeProto = onnxProto.onnx.IAttributeProto;
export type ValueInfoProto = onnxProto.onnx.IValueInfoProto;
export type TypeProto = onnxProto.onnx.ITypeProto;
export type ModelProtoFields = onnxProto.onnx.IModelProto;

/** protobufjs gives int64 fields as a number or a Long ({low, high}) depending on the value. */
export type Int64 = number | { low: number; high: number; unsigned?: boolean } | null | undefined;

/** An int64 as a JS number (exact up to 2^53; larger magnitudes, e.g. INT64_MAX in Slice ends, round). */
export function int64(x: Int64): number {
  if (x === null || x === undefined) return 0;
  if (typeof x === 'number') return x;
  const lo = x.low >>> 0;
  if (x.unsigned) return (x.high >>> 0) * 2 ** 32 + lo;
  return x.high * 2 ** 32 + lo;
}

export function badModel(
  reason: string,
  message: string,
  details: Record<string, unknown> = {},
): TandemError {
  return new TandemError('TANDEM_ERR_BAD_DATA', `onnx: ${message}`, { reason, ...details });
}

function decodeWith<T>(what: string, bytes: Uint8Array, decode: (b: Uint8Array) => T): T {
  if (bytes.length === 0) throw badModel('empty', `the ${what} file is empty`);
  try {
    return decode(bytes);
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    // protobufjs reports a message cut short as "index out of range".
    const reason = /index out of range/.test(msg) ? 'truncated' : 'not-onnx';
    throw badModel(reason, `not a valid ONNX ${what} (${reason}): ${msg}`, { cause: msg });
  }
}

export function decodeModel(bytes: Uint8Array): ModelProto {
  return decodeWith('model', bytes, (b) => onnx.ModelProto.decode(b));
}

export function decodeTensor(bytes: Uint8Array): onnxProto.onnx.TensorProto {
  return decodeWith('tensor', bytes, (b) => onnx.TensorProto.decode(b));
}
