/**
 * safetensors checkpoints, written and read with file handles and large sequential writes/reads: the
 * bytes of a tensor go from its typed array to the file (and back) without JavaScript touching elements.
 * The layout matches the reference writer (huggingface `safetensors`): "__metadata__" first, tensors
 * sorted by dtype (largest elements first) then name, header padded with spaces to 8 bytes. Reading is
 * strict (safetensors-header.ts): any defect is TANDEM_ERR_BAD_CHECKPOINT with a `reason`.
 */
import { open, rename, rm } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { endianness } from 'node:os';
import { dirname } from 'node:path';
import { type DType, type HostArray, hostView, isDType } from '../core/dtype.js';
import { TandemError } from '../core/errors.js';
import {
  type HeaderEntry,
  type SafetensorsDType,
  type SafetensorsHeader,
  compareLayout,
  elementBytes,
  encodeHeader,
  headerLength,
  isSafetensorsDType,
  numelOf,
  parseHeader,
  safetensorsDType,
  tandemDType,
} from './safetensors-header.js';

export {
  type BadCheckpointReason,
  type HeaderEntry,
  type SafetensorsDType,
  type SafetensorsHeader,
  SAFETENSORS_DTYPES,
  safetensorsDType,
  tandemDType,
} from './safetensors-header.js';

/** One tensor to save: its dtype (Tandem's or safetensors' name), shape and bytes (any typed array). */
export interface TensorToSave {
  readonly dtype: DType | SafetensorsDType;
  readonly shape: readonly number[];
  readonly data: ArrayBufferView;
}

export interface SaveOptions {
  /** String metadata stored under "__metadata__". */
  readonly metadata?: Readonly<Record<string, string>>;
  /**
   * fsync the file before it replaces `path`, and the directory after (a checkpoint that survives a
   * power cut). Default false.
   */
  readonly durable?: boolean;
}

export interface LoadedTensor {
  readonly name: string;
  readonly dtype: SafetensorsDType;
  readonly shape: readonly number[];
  /**
   * The raw little-endian bytes: the caller's destination (LoadOptions.into), or an ArrayBuffer of
   * their own (offset 0, so every typed view fits).
   */
  readonly bytes: Uint8Array;
}

export interface SafetensorsFile {
  /** In file order. */
  readonly tensors: ReadonlyMap<string, LoadedTensor>;
  readonly metadata: Readonly<Record<string, string>>;
}

/** One read or write system call moves at most this much (Linux caps a call near 2 GiB). */
const IO_CHUNK = 1 << 30;
/** Tensors smaller than this are batched through one staging buffer of STAGE_BYTES. */
const SMALL_TENSOR = 1 << 20;
const STAGE_BYTES = 8 << 20;

function requireLittleEndian(): void {
  if (endianness() !== 'LE') {
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      'safetensors: data is little-endian; this host is big-endian',
    );
  }
}

function bytesOf(data: ArrayBufferView): Uint8Array {
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

async function writeAll(fh: FileHandle, bytes: Uint8Array, position: number): Promise<void> {
  let done = 0;
  while (done < bytes.length) {
    const len = Math.min(IO_CHUNK, bytes.length - done);
    const { bytesWritten } = await fh.write(bytes, done, len, position + done);
    done += bytesWritten;
  }
}

async function readAll(fh: FileHandle, into: Uint8Array, position: number, file: string): Promise<void> {
  let done = 0;
  while (done < into.length) {
    const len = Math.min(IO_CHUNK, into.length - done);
    const { bytesRead } = await fh.read(into, done, len, position + done);
    if (bytesRead === 0) {
      throw new TandemError(
        'TANDEM_ERR_BAD_CHECKPOINT',
        `safetensors: ${file}: the file ended early (it changed while being read?)`,
        {
          file,
          reason: 'truncated',
        },
      );
    }
    done += bytesRead;
  }
}

function invalid(message: string, details: Record<string, unknown>): TandemError {
  return new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `safetensors: ${message}`, details);
}

/** Checks what the caller gives and lays the tensors out in the reference writer's order. */
function plan(tensors: Iterable<readonly [string, TensorToSave]>): {
  entries: HeaderEntry[];
  data: Map<string, Uint8Array>;
} {
  const list: { name: string; dtype: SafetensorsDType; shape: number[]; bytes: Uint8Array }[] = [];
  const seen = new Set<string>();
  for (const [name, t] of tensors) {
    if (name.length === 0 || name === '__metadata__')
      throw invalid(`invalid tensor name ${JSON.stringify(name)}`, { tensor: name });
    if (seen.has(name)) throw invalid(`tensor "${name}" given twice`, { tensor: name });
    seen.add(name);
    const dtype = isSafetensorsDType(t.dtype)
      ? t.dtype
      : isDType(t.dtype)
        ? safetensorsDType(t.dtype)
        : undefined;
    if (dtype === undefined) {
      throw new TandemError(
        'TANDEM_ERR_DTYPE',
        `safetensors: tensor "${name}": unsupported dtype ${JSON.stringify(t.dtype)}`,
        { tensor: name },
      );
    }
    if (!t.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
      throw new TandemError(
        'TANDEM_ERR_SHAPE',
        `safetensors: tensor "${name}": shape [${t.shape.join(', ')}] must hold non-negative integers`,
        { tensor: name },
      );
    }
    const need = numelOf(t.shape) * elementBytes(dtype);
    if (t.data.byteLength !== need) {
      throw new TandemError(
        'TANDEM_ERR_SHAPE',
        `safetensors: tensor "${name}": shape [${t.shape.join(', ')}] of ${dtype} needs ${need} bytes, data has ${t.data.byteLength}`,
        { tensor: name },
      );
    }
    list.push({ name, dtype, shape: [...t.shape], bytes: bytesOf(t.data) });
  }
  list.sort(compareLayout);
  const entries: HeaderEntry[] = [];
  const data = new Map<string, Uint8Array>();
  let at = 0;
  for (const t of list) {
    entries.push({ name: t.name, dtype: t.dtype, shape: t.shape, begin: at, end: at + t.bytes.length });
    data.set(t.name, t.bytes);
    at += t.bytes.length;
  }
  return { entries, data };
}

/**
 * Writes `tensors` to `path` as safetensors. The file is written next to `path` and renamed over it
 * at the end, so a crash never leaves a half-written checkpoint under the final name. Returns the size.
 */
export async function saveSafetensors(
  path: string,
  tensors: Readonly<Record<string, TensorToSave>> | ReadonlyMap<string, TensorToSave>,
  options: SaveOptions = {},
): Promise<{ bytes: number }> {
  requireLittleEndian();
  const { entries, data } = plan(tensors instanceof Map ? tensors.entries() : Object.entries(tensors));
  const header = encodeHeader(entries, options.metadata);
  const tmp = `${path}.${process.pid}.tmp`;
  const fh = await open(tmp, 'w');
  let position = 0;
  try {
    await writeAll(fh, header, 0);
    position = header.length;
    const stage = new Uint8Array(STAGE_BYTES);
    let staged = 0;
    const flush = async (): Promise<void> => {
      await writeAll(fh, stage.subarray(0, staged), position);
      position += staged;
      staged = 0;
    };
    for (const e of entries) {
      const bytes = data.get(e.name)!;
      if (bytes.length < SMALL_TENSOR) {
        if (staged + bytes.length > STAGE_BYTES) await flush();
        stage.set(bytes, staged);
        staged += bytes.length;
      } else {
        if (staged > 0) await flush();
        await writeAll(fh, bytes, position);
        position += bytes.length;
      }
    }
    if (staged > 0) await flush();
    if (options.durable === true) await fh.sync();
  } catch (e) {
    await fh.close();
    await rm(tmp, { force: true });
    throw e;
  }
  await fh.close();
  await rename(tmp, path);
  if (options.durable === true) {
    // The rename itself is durable only once the directory entry is on disk.
    const dirHandle = await open(dirname(path), 'r');
    try {
      await dirHandle.sync();
    } finally {
      await dirHandle.close();
    }
  }
  return { bytes: position };
}

async function openForRead(path: string): Promise<FileHandle> {
  try {
    return await open(path, 'r');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new TandemError(
        'TANDEM_ERR_NOT_FOUND',
        `safetensors: no file ${path}`,
        { file: path },
        { cause: e },
      );
    }
    throw e;
  }
}

async function readHeaderFrom(
  fh: FileHandle,
  file: string,
): Promise<SafetensorsHeader & { fileBytes: number }> {
  const fileBytes = (await fh.stat()).size;
  const prefix = Buffer.alloc(8);
  if (fileBytes >= 8) await readAll(fh, prefix, 0, file);
  const n = headerLength(file, prefix, fileBytes);
  const json = Buffer.alloc(n);
  await readAll(fh, json, 8, file);
  return { ...parseHeader(file, json, 8 + n, fileBytes), fileBytes };
}

/** Reads and validates only the header (names, dtypes, shapes, offsets, metadata): no tensor data. */
export async function readSafetensorsHeader(path: string): Promise<SafetensorsHeader> {
  const fh = await openForRead(path);
  try {
    const { entries, metadata, dataStart } = await readHeaderFrom(fh, path);
    return { entries, metadata, dataStart };
  } finally {
    await fh.close();
  }
}

export interface LoadOptions {
  /**
   * Where a tensor's bytes go: return a view of exactly its size (e.g. the host buffer of the model's
   * parameter, for a resume) and the file is read straight into it; undefined: a new buffer. Memory
   * that is already mapped is much faster to fill than fresh memory, which the OS must fault in page
   * by page.
   */
  readonly into?: (entry: HeaderEntry) => ArrayBufferView | undefined;
}

function destinationOf(options: LoadOptions, e: HeaderEntry): Uint8Array | undefined {
  const view = options.into?.(e);
  if (view === undefined) return undefined;
  if (view.byteLength !== e.end - e.begin) {
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `safetensors: tensor "${e.name}" has ${e.end - e.begin} bytes, its destination ${view.byteLength}`,
      { tensor: e.name },
    );
  }
  return bytesOf(view);
}

/**
 * Reads a whole safetensors file. Each tensor is read with large reads into its destination (or a
 * buffer of its own); runs of small tensors are read in one call through a staging buffer and copied
 * out natively.
 */
export async function loadSafetensors(path: string, options: LoadOptions = {}): Promise<SafetensorsFile> {
  requireLittleEndian();
  const fh = await openForRead(path);
  try {
    const header = await readHeaderFrom(fh, path);
    const tensors = new Map<string, LoadedTensor>();
    const entries = header.entries;
    const stage = new Uint8Array(STAGE_BYTES);
    const isSmall = (e: HeaderEntry): boolean => e.end - e.begin < SMALL_TENSOR;
    let i = 0;
    while (i < entries.length) {
      const e = entries[i]!;
      if (!isSmall(e)) {
        const bytes = destinationOf(options, e) ?? new Uint8Array(e.end - e.begin);
        await readAll(fh, bytes, header.dataStart + e.begin, path);
        tensors.set(e.name, { name: e.name, dtype: e.dtype, shape: e.shape, bytes });
        i++;
        continue;
      }
      // A run of consecutive small tensors that fits the staging buffer: one read, native copies.
      let j = i;
      while (j < entries.length && isSmall(entries[j]!) && entries[j]!.end - e.begin <= STAGE_BYTES) j++;
      const run = stage.subarray(0, entries[j - 1]!.end - e.begin);
      await readAll(fh, run, header.dataStart + e.begin, path);
      for (let k = i; k < j; k++) {
        const t = entries[k]!;
        const part = run.subarray(t.begin - e.begin, t.end - e.begin);
        const dest = destinationOf(options, t);
        if (dest !== undefined) dest.set(part);
        tensors.set(t.name, { name: t.name, dtype: t.dtype, shape: t.shape, bytes: dest ?? part.slice() });
      }
      i = j;
    }
    return { tensors, metadata: header.metadata };
  } finally {
    await fh.close();
  }
}

/** A zero-copy typed view of a loaded tensor in its Tandem dtype (f16/bf16 as raw Uint16 words). */
export function hostArrayOf(t: LoadedTensor): HostArray {
  const dtype = tandemDType(t.dtype);
  if (dtype === undefined) {
    throw new TandemError(
      'TANDEM_ERR_DTYPE',
      `safetensors: tensor "${t.name}" is ${t.dtype}, which has no Tandem dtype (read it with int64Of)`,
      { tensor: t.name },
    );
  }
  return hostView(dtype, t.bytes.buffer, t.bytes.byteOffset, t.bytes.length / elementBytes(t.dtype));
}

/** A zero-copy BigInt64Array view of an I64 tensor (e.g. token ids or step counters). */
export function int64Of(t: LoadedTensor): BigInt64Array {
  if (t.dtype !== 'I64') {
    throw new TandemError('TANDEM_ERR_DTYPE', `safetensors: tensor "${t.name}" is ${t.dtype}, not I64`, {
      tensor: t.name,
    });
  }
  return new BigInt64Array(t.bytes.buffer, t.bytes.byteOffset, t.bytes.length / 8);
}
