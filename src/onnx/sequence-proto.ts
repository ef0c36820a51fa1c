/**
 * SequenceProto and OptionalProto, the files ONNX's node tests store sequence and optional values in.
 * npm onnx-proto's schema predates them, so their few fields are read here from the wire format; the
 * tensors inside are TensorProto messages, decoded as usual.
 */
import type { HostTensor } from './host-tensor.js';
import { badModel, decodeTensor } from './proto.js';
import { tensorFromProto } from './tensor-proto.js';

export interface SequenceData {
  readonly sequence: readonly HostTensor[];
}
export interface OptionalData {
  readonly optional: HostTensor | SequenceData | null;
}
export type ValueData = HostTensor | SequenceData | OptionalData;

/** (field number, bytes) of a message's length-delimited fields; varints and fixed fields are skipped. */
function fields(b: Uint8Array): Array<[number, Uint8Array]> {
  const out: Array<[number, Uint8Array]> = [];
  let p = 0;
  const varint = (): number => {
    let x = 0;
    let scale = 1;
    for (;;) {
      if (p >= b.length) throw badModel('truncated', 'a sequence or optional value is cut short');
      const c = b[p++]!;
      x += (c & 0x7f) * scale;
      if (c < 0x80) return x;
      scale *= 128;
    }
  };
  while (p < b.length) {
    const key = varint();
    const wire = key % 8;
    if (wire === 0) varint();
    else if (wire === 1) p += 8;
    else if (wire === 5) p += 4;
    else if (wire === 2) {
      const n = varint();
      if (p + n > b.length) throw badModel('truncated', 'a sequence or optional value is cut short');
      out.push([Math.floor(key / 8), b.subarray(p, p + n)]);
      p += n;
    } else throw badModel('not-onnx', `wire type ${wire} in a sequence or optional value`);
  }
  return out;
}

const TENSOR_FIELD = 3;
const SEQUENCE_FIELD = 5;

export function decodeSequence(bytes: Uint8Array): SequenceData {
  return {
    sequence: fields(bytes)
      .filter(([f]) => f === TENSOR_FIELD)
      .map(([, b]) => tensorFromProto(decodeTensor(b))),
  };
}

export function decodeOptional(bytes: Uint8Array): OptionalData {
  for (const [f, b] of fields(bytes)) {
    if (f === TENSOR_FIELD) return { optional: tensorFromProto(decodeTensor(b)) };
    if (f === SEQUENCE_FIELD) return { optional: decodeSequence(b) };
  }
  return { optional: null };
}
