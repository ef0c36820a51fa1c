/**
 * The safetensors header: dtypes, the writer's layout (the order the Rust/Python `safetensors` crate
 * writes) and the strict reader's validation. A file is: u64 little-endian N, N bytes of JSON
 * {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {string: string}} padded with
 * spaces to a multiple of 8, then the tensors' raw little-endian bytes (offsets relative to the data).
 * Every defect of a file is TANDEM_ERR_BAD_CHECKPOINT with `details.reason`, a stable sub-code.
 */
import type { DType } from '../core/dtype.js';
import { TandemError } from '../core/errors.js';

export const SAFETENSORS_DTYPES = ['F64', 'F32', 'F16', 'BF16', 'I64', 'I32', 'U8'] as const;
export type SafetensorsDType = (typeof SAFETENSORS_DTYPES)[number];

const ELEMENT_BYTES: Record<SafetensorsDType, number> = {
  F64: 8,
  F32: 4,
  F16: 2,
  BF16: 2,
  I64: 8,
  I32: 4,
  U8: 1,
};

/**
 * The crate's `Dtype` enum order (BOOL U8 I8 F8_E5M2 F8_E4M3 I16 U16 F16 BF16 I32 U32 F32 F64 I64 U64):
 * the writer sorts tensors by this rank, descending, then by name, so larger elements come first and
 * every offset stays aligned.
 */
const CRATE_RANK: Record<SafetensorsDType, number> = {
  U8: 1,
  F16: 7,
  BF16: 8,
  I32: 9,
  F32: 11,
  F64: 12,
  I64: 13,
};

const TO_TANDEM: Partial<Record<SafetensorsDType, DType>> = {
  F64: 'f64',
  F32: 'f32',
  F16: 'f16',
  BF16: 'bf16',
  I32: 'i32',
  U8: 'u8',
};

const FROM_TANDEM: Record<DType, SafetensorsDType> = {
  f64: 'F64',
  f32: 'F32',
  f16: 'F16',
  bf16: 'BF16',
  i32: 'I32',
  u8: 'U8',
};

/** The crate refuses headers above 100 MB; so do we (a corrupt length must not allocate gigabytes). */
export const MAX_HEADER_BYTES = 100_000_000;

export function elementBytes(dtype: SafetensorsDType): number {
  return ELEMENT_BYTES[dtype];
}

export function isSafetensorsDType(x: unknown): x is SafetensorsDType {
  return typeof x === 'string' && (SAFETENSORS_DTYPES as readonly string[]).includes(x);
}

/** The Tandem dtype a safetensors dtype loads as; I64 has none (it loads as raw BigInt64 words). */
export function tandemDType(dtype: SafetensorsDType): DType | undefined {
  return TO_TANDEM[dtype];
}

export function safetensorsDType(dtype: DType): SafetensorsDType {
  return FROM_TANDEM[dtype];
}

export interface HeaderEntry {
  readonly name: string;
  readonly dtype: SafetensorsDType;
  readonly shape: readonly number[];
  /** Offsets relative to the start of the data section. */
  readonly begin: number;
  readonly end: number;
}

export interface SafetensorsHeader {
  /** Entries in file order (ascending offsets). */
  readonly entries: readonly HeaderEntry[];
  readonly metadata: Readonly<Record<string, string>>;
  /** Absolute file offset where the data section starts (8 + N). */
  readonly dataStart: number;
}

export type BadCheckpointReason =
  | 'truncated'
  | 'header-too-large'
  | 'header-json'
  | 'header-entry'
  | 'dtype'
  | 'size'
  | 'offsets'
  | 'out-of-range'
  | 'alignment'
  | 'trailing-bytes';

export function badCheckpoint(
  file: string,
  reason: BadCheckpointReason,
  message: string,
  extra: Record<string, unknown> = {},
): TandemError {
  return new TandemError('TANDEM_ERR_BAD_CHECKPOINT', `safetensors: ${file}: ${message}`, {
    file,
    reason,
    ...extra,
  });
}

export function numelOf(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/**
 * The header bytes for `entries` (already in layout order with their offsets) and `metadata`:
 * compact JSON, "__metadata__" first, then the tensors in data order, padded with spaces to 8 bytes.
 */
export function encodeHeader(
  entries: readonly HeaderEntry[],
  metadata: Readonly<Record<string, string>> | undefined,
): Buffer {
  // Built by hand, not from an object: JS objects put integer-like keys ("0", "12") first, which
  // would reorder tensors named like layer indices.
  const parts: string[] = [];
  if (metadata !== undefined) {
    const fields = Object.keys(metadata)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${JSON.stringify(metadata[k])}`);
    parts.push(`"__metadata__":{${fields.join(',')}}`);
  }
  for (const e of entries) {
    const info = { dtype: e.dtype, shape: e.shape, data_offsets: [e.begin, e.end] };
    parts.push(`${JSON.stringify(e.name)}:${JSON.stringify(info)}`);
  }
  const json = Buffer.from(`{${parts.join(',')}}`, 'utf8');
  const padded = Math.ceil(json.length / 8) * 8;
  const out = Buffer.alloc(8 + padded, 0x20);
  out.writeBigUInt64LE(BigInt(padded), 0);
  json.copy(out, 8);
  return out;
}

/** Layout order of the reference writer: dtype rank descending, then name (byte order, like Rust's). */
export function compareLayout(
  a: { name: string; dtype: SafetensorsDType },
  b: { name: string; dtype: SafetensorsDType },
): number {
  const byRank = CRATE_RANK[b.dtype] - CRATE_RANK[a.dtype];
  if (byRank !== 0) return byRank;
  return Buffer.compare(Buffer.from(a.name, 'utf8'), Buffer.from(b.name, 'utf8'));
}

/** Reads N from the first 8 bytes and checks it against the file size. */
export function headerLength(file: string, prefix: Buffer, fileBytes: number): number {
  if (fileBytes < 8)
    throw badCheckpoint(
      file,
      'truncated',
      `the file has ${fileBytes} bytes, fewer than the 8-byte header length`,
    );
  const n = prefix.readBigUInt64LE(0);
  if (n > BigInt(MAX_HEADER_BYTES)) {
    throw badCheckpoint(
      file,
      'header-too-large',
      `header length ${n} exceeds the ${MAX_HEADER_BYTES}-byte limit`,
    );
  }
  if (Number(n) > fileBytes - 8) {
    throw badCheckpoint(
      file,
      'truncated',
      `header length ${n} runs past the end of the file (${fileBytes} bytes)`,
    );
  }
  return Number(n);
}

function isNonNegativeInt(x: unknown): x is number {
  return typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
}

function parseJson(file: string, bytes: Buffer): Record<string, unknown> {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw badCheckpoint(file, 'header-json', 'the header is not valid UTF-8');
  }
  if (!text.startsWith('{')) throw badCheckpoint(file, 'header-json', 'the header does not start with "{"');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw badCheckpoint(file, 'header-json', `the header is not valid JSON (${(e as Error).message})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw badCheckpoint(file, 'header-json', 'the header is not a JSON object');
  }
  return parsed as Record<string, unknown>;
}

function parseMetadata(file: string, value: unknown): Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw badCheckpoint(file, 'header-entry', '"__metadata__" must be an object of strings');
  }
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== 'string')
      throw badCheckpoint(file, 'header-entry', `"__metadata__.${k}" must be a string`);
    out[k] = v;
  }
  return out;
}

function parseEntry(file: string, name: string, value: unknown): HeaderEntry {
  const bad = (what: string): TandemError =>
    badCheckpoint(file, 'header-entry', `tensor "${name}": ${what}`, { tensor: name });
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw bad('entry is not an object');
  const { dtype, shape, data_offsets: offsets } = value as Record<string, unknown>;
  if (!isSafetensorsDType(dtype)) {
    throw badCheckpoint(
      file,
      'dtype',
      `tensor "${name}": unknown or unsupported dtype ${JSON.stringify(dtype)} (known: ${SAFETENSORS_DTYPES.join(', ')})`,
      { tensor: name },
    );
  }
  if (!Array.isArray(shape) || !shape.every(isNonNegativeInt))
    throw bad('shape must be an array of non-negative integers');
  if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(isNonNegativeInt)) {
    throw bad('data_offsets must be [begin, end] with non-negative integers');
  }
  const [begin, end] = offsets as [number, number];
  if (end < begin)
    throw badCheckpoint(file, 'offsets', `tensor "${name}": data_offsets end ${end} < begin ${begin}`, {
      tensor: name,
    });
  const need = numelOf(shape as number[]) * ELEMENT_BYTES[dtype];
  if (need !== end - begin) {
    throw badCheckpoint(
      file,
      'size',
      `tensor "${name}": shape [${shape.join(', ')}] of ${dtype} needs ${need} bytes, data_offsets give ${end - begin}`,
      { tensor: name },
    );
  }
  if (begin % ELEMENT_BYTES[dtype] !== 0) {
    throw badCheckpoint(
      file,
      'alignment',
      `tensor "${name}": offset ${begin} is not a multiple of the ${ELEMENT_BYTES[dtype]}-byte ${dtype} element`,
      { tensor: name },
    );
  }
  return { name, dtype, shape: shape as number[], begin, end };
}

/**
 * Parses and validates the JSON header. The tensors must tile the data section exactly: sorted by
 * offset, each begins where the previous ended (no overlap, no gap), and the last ends at the file's end.
 */
export function parseHeader(
  file: string,
  json: Buffer,
  dataStart: number,
  fileBytes: number,
): SafetensorsHeader {
  const raw = parseJson(file, json);
  let metadata: Record<string, string> = {};
  const entries: HeaderEntry[] = [];
  for (const [name, value] of Object.entries(raw)) {
    if (name === '__metadata__') metadata = parseMetadata(file, value);
    else entries.push(parseEntry(file, name, value));
  }
  entries.sort((a, b) => a.begin - b.begin || a.end - b.end);
  const dataBytes = fileBytes - dataStart;
  let at = 0;
  for (const e of entries) {
    if (e.begin < at) {
      throw badCheckpoint(
        file,
        'offsets',
        `tensor "${e.name}" [${e.begin}, ${e.end}) overlaps the tensor before it (which ends at ${at})`,
        { tensor: e.name },
      );
    }
    if (e.begin > at) {
      throw badCheckpoint(
        file,
        'offsets',
        `tensor "${e.name}" begins at ${e.begin}, leaving a gap after ${at}`,
        { tensor: e.name },
      );
    }
    if (e.end > dataBytes) {
      throw badCheckpoint(
        file,
        'out-of-range',
        `tensor "${e.name}" ends at ${e.end}, past the ${dataBytes}-byte data section (truncated file?)`,
        { tensor: e.name },
      );
    }
    at = e.end;
  }
  if (at !== dataBytes) {
    throw badCheckpoint(
      file,
      'trailing-bytes',
      `the tensors cover ${at} bytes but the data section has ${dataBytes}`,
    );
  }
  return { entries, metadata, dataStart };
}
