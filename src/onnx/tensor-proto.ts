/**
 * TensorProto → HostTensor: raw_data (little-endian), the typed repeated fields, and external data
 * files. External files are resolved relative to the model's directory; an absolute location, one
 * that climbs out of that directory (also through a symbolic link), or a range past the file's end is
 * refused, so a model file can never make the service read anything outside its own folder.
 */
import { closeSync, openSync, readSync, realpathSync, statSync } from 'node:fs';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { bf16ToF32, f16ToF32 } from '../core/dtype.js';
import { TandemError } from '../core/errors.js';
import { badModel, int64, type Int64, type TensorProto } from './proto.js';
import { elemTypeOf, hostTensor, numelOf, type ElemType, type HostTensor } from './host-tensor.js';

const BYTES: Partial<Record<ElemType, number>> = {
  float: 4,
  double: 8,
  float16: 2,
  bfloat16: 2,
  int8: 1,
  uint8: 1,
  bool: 1,
  int16: 2,
  uint16: 2,
  int32: 4,
  uint32: 4,
  int64: 8,
  uint64: 8,
};

export interface TensorSource {
  /** The directory external data locations are resolved in (the model file's directory). */
  readonly baseDir?: string;
}

export function tensorFromProto(t: TensorProto, src: TensorSource = {}): HostTensor {
  const name = t.name ?? '';
  const type = elemTypeOf(t.dataType ?? 0, `tensor '${name}'`);
  const dims = (t.dims ?? []).map((d) => int64(d as Int64));
  if (dims.some((d) => !Number.isInteger(d) || d < 0)) {
    throw badModel('dims', `tensor '${name}' has invalid dims [${dims.join(', ')}]`);
  }
  const n = numelOf(dims);
  const width = BYTES[type];
  if (width === undefined) {
    throw new TandemError(
      'TANDEM_ERR_UNSUPPORTED',
      `onnx: tensor '${name}' has element type ${type}, which Tandem does not load`,
      { dtype: type },
    );
  }
  if (t.dataLocation === 1) {
    const bytes = readExternal(t, name, n * width, src);
    return hostTensor(type, dims, decodeRaw(type, bytes, n));
  }
  if (t.rawData && t.rawData.length > 0) {
    if (t.rawData.length !== n * width) {
      throw badModel('size', `tensor '${name}' has ${t.rawData.length} raw bytes, shape needs ${n * width}`);
    }
    return hostTensor(type, dims, decodeRaw(type, t.rawData, n));
  }
  const typed = typedField(t, type);
  if (typed.length !== n) {
    throw badModel(
      'size',
      `tensor '${name}' has ${typed.length} values, shape [${dims.join(', ')}] needs ${n}`,
    );
  }
  return hostTensor(type, dims, typed);
}

function typedField(t: TensorProto, type: ElemType): number[] {
  switch (type) {
    case 'float':
      return t.floatData ?? [];
    case 'double':
      return t.doubleData ?? [];
    case 'int64':
      return (t.int64Data ?? []).map((x) => int64(x as Int64));
    case 'uint32':
    case 'uint64':
      return (t.uint64Data ?? []).map((x) => int64(x as Int64));
    case 'float16':
      return (t.int32Data ?? []).map((h) => f16ToF32(h & 0xffff));
    case 'bfloat16':
      return (t.int32Data ?? []).map((h) => bf16ToF32(h & 0xffff));
    default:
      return t.int32Data ?? [];
  }
}

function decodeRaw(type: ElemType, bytes: Uint8Array, n: number): Float64Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = readElem(view, type, i);
  return out;
}

function readElem(v: DataView, type: ElemType, i: number): number {
  switch (type) {
    case 'float':
      return v.getFloat32(i * 4, true);
    case 'double':
      return v.getFloat64(i * 8, true);
    case 'float16':
      return f16ToF32(v.getUint16(i * 2, true));
    case 'bfloat16':
      return bf16ToF32(v.getUint16(i * 2, true));
    case 'int8':
      return v.getInt8(i);
    case 'uint8':
    case 'bool':
      return v.getUint8(i);
    case 'int16':
      return v.getInt16(i * 2, true);
    case 'uint16':
      return v.getUint16(i * 2, true);
    case 'int32':
      return v.getInt32(i * 4, true);
    case 'uint32':
      return v.getUint32(i * 4, true);
    case 'int64':
      return Number(v.getBigInt64(i * 8, true));
    default:
      return Number(v.getBigUint64(i * 8, true));
  }
}

function readExternal(t: TensorProto, name: string, need: number, src: TensorSource): Uint8Array {
  const kv = new Map((t.externalData ?? []).map((e) => [e.key ?? '', e.value ?? '']));
  const location = kv.get('location');
  if (!location) throw badModel('external-data', `tensor '${name}' is external but names no location`);
  if (src.baseDir === undefined) {
    throw badModel('external-data', `tensor '${name}' is external but the model was not loaded from a file`);
  }
  const offset = Number(kv.get('offset') ?? '0');
  const length = kv.has('length') ? Number(kv.get('length')) : need;
  if (!Number.isSafeInteger(offset) || offset < 0 || length !== need) {
    throw badModel(
      'external-data',
      `tensor '${name}': external offset ${offset} / length ${length} invalid (needs ${need} bytes)`,
    );
  }
  const path = insideDir(src.baseDir, location, name);
  let size: number;
  try {
    size = statSync(path).size;
  } catch {
    throw badModel('external-data', `tensor '${name}': external data file '${location}' is missing`, {
      location,
    });
  }
  if (offset + need > size) {
    throw badModel(
      'external-data',
      `tensor '${name}': external data '${location}' is ${size} bytes, needs ${offset + need}`,
    );
  }
  const buf = new Uint8Array(need);
  const fd = openSync(path, 'r');
  try {
    let done = 0;
    while (done < need) {
      const k = readSync(fd, buf, done, need - done, offset + done);
      if (k <= 0) break;
      done += k;
    }
  } finally {
    closeSync(fd);
  }
  return buf;
}

/** The external file's path, or a refusal when it is absolute or resolves (links included) outside baseDir. */
function insideDir(baseDir: string, location: string, name: string): string {
  const escapes = (base: string, p: string): boolean => {
    const rel = relative(base, p);
    return rel === '' || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel);
  };
  const base = resolve(baseDir);
  const path = resolve(base, location);
  if (isAbsolute(location) || location.includes('\0') || escapes(base, path)) {
    throw badModel(
      'external-path',
      `tensor '${name}': external data location '${location}' is outside the model's directory`,
      { location },
    );
  }
  try {
    if (escapes(realpathSync(base), realpathSync(path))) {
      throw badModel(
        'external-path',
        `tensor '${name}': external data '${location}' links outside the model's directory`,
        { location },
      );
    }
  } catch (err) {
    if (err instanceof Error && 'code' in err && err.code === 'TANDEM_ERR_BAD_DATA') throw err;
    // A missing file is reported by the caller's stat.
  }
  return path;
}
