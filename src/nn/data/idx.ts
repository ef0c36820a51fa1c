/**
 * IDX files (the MNIST family's format: a big-endian u32 magic 0x000008RR — unsigned bytes, rank RR —
 * then RR big-endian u32 sizes, then the bytes), plain or gzip-compressed (decompressed with node:zlib
 * on its thread pool, chunk by chunk), and Fashion-MNIST from Debian's `dataset-fashion-mnist` as
 * normalised images, converted in slices so that a server loading it keeps answering.
 * Every problem with a file is a TandemError TANDEM_ERR_BAD_DATA whose details say which file and
 * why (`reason`: missing, unreadable, gzip, magic, truncated, trailing, mismatch, label).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { TandemError } from '../../core/errors.js';
import { bytesToUnit, gunzipInChunks } from './event-loop-friendly.js';
import type { ImageSet } from './images.js';

export const IDX_LABELS_MAGIC = 0x00000801;
export const IDX_IMAGES_MAGIC = 0x00000803;
export const FASHION_MNIST_DIR = '/usr/share/datasets/fashion-mnist';
export const FASHION_MNIST_PACKAGE = 'dataset-fashion-mnist';
const FASHION_MNIST_CLASSES = 10;

export type BadDataReason =
  'missing' | 'unreadable' | 'gzip' | 'magic' | 'truncated' | 'trailing' | 'mismatch' | 'label';

export interface IdxArray {
  /** Sizes from the header, outermost first. */
  readonly dims: readonly number[];
  /** The elements (unsigned bytes), row-major. */
  readonly data: Uint8Array;
}

function badData(
  op: string,
  file: string,
  reason: BadDataReason,
  message: string,
  details: Record<string, unknown> = {},
  cause?: unknown,
): TandemError {
  return new TandemError(
    'TANDEM_ERR_BAD_DATA',
    `${op}: ${file}: ${message}`,
    { file, reason, ...details },
    { cause },
  );
}

const hex = (n: number): string => `0x${n.toString(16).padStart(8, '0')}`;

/** Parses the bytes of an IDX file whose magic must be `magic` (the unsigned-byte type and the rank). */
export function parseIdx(bytes: Uint8Array, file: string, magic: number): IdxArray {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < 4)
    throw badData('parseIdx', file, 'truncated', `${bytes.length} bytes, shorter than the 4-byte magic`);
  const got = view.getUint32(0, false);
  if (got !== magic) {
    throw badData(
      'parseIdx',
      file,
      'magic',
      `magic number ${hex(got)}, expected ${hex(magic)} (${magic === IDX_IMAGES_MAGIC ? 'images' : 'labels'}: unsigned bytes, rank ${magic & 0xff})`,
      {
        magic: got,
        expected: magic,
      },
    );
  }
  const rank = magic & 0xff;
  const header = 4 + 4 * rank;
  if (bytes.length < header)
    throw badData(
      'parseIdx',
      file,
      'truncated',
      `${bytes.length} bytes, shorter than its ${header}-byte header`,
    );
  const dims: number[] = [];
  for (let i = 0; i < rank; i++) dims.push(view.getUint32(4 + 4 * i, false));
  const count = dims.reduce((a, b) => a * b, 1);
  const have = bytes.length - header;
  if (have < count) {
    throw badData(
      'parseIdx',
      file,
      'truncated',
      `holds ${have} data bytes, its header [${dims.join(', ')}] needs ${count}`,
      { dims, have, need: count },
    );
  }
  if (have > count) {
    throw badData(
      'parseIdx',
      file,
      'trailing',
      `holds ${have - count} bytes beyond the ${count} its header [${dims.join(', ')}] describes`,
      { dims, have, need: count },
    );
  }
  return { dims, data: bytes.subarray(header) };
}

function isGzip(bytes: Uint8Array): boolean {
  return bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
}

/** Reads `path` (gzip-compressed or not: the content decides) as an IDX file with the given magic. */
export async function readIdx(path: string, magic: number): Promise<IdxArray> {
  let bytes: Uint8Array;
  try {
    bytes = await readFile(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw badData('readIdx', path, 'missing', 'no such file', {}, e);
    throw badData('readIdx', path, 'unreadable', (e as Error).message, {}, e);
  }
  if (isGzip(bytes)) {
    try {
      bytes = await gunzipInChunks(bytes);
    } catch (e) {
      throw badData('readIdx', path, 'gzip', `not a complete gzip stream (${(e as Error).message})`, {}, e);
    }
  }
  return parseIdx(bytes, path, magic);
}

/** Fashion-MNIST (or any IDX image set) as the nn layer takes it: values in [0, 1], one channel. */
export interface LabeledImages extends ImageSet {
  /** [count, 1, height, width]: the NCHW shape of `images`. */
  readonly shape: readonly [number, 1, number, number];
}

export interface FashionMnist {
  readonly train: LabeledImages;
  readonly test: LabeledImages;
}

/** The first of `base`, `base.gz` in `dir` that exists (tried in that order), else the missing-file error. */
async function readFirst(op: string, dir: string, base: string, magic: number): Promise<IdxArray> {
  const plain = join(dir, base);
  try {
    return await readIdx(plain, magic);
  } catch (e) {
    if (!(e instanceof TandemError) || e.details.reason !== 'missing') throw e;
  }
  try {
    return await readIdx(`${plain}.gz`, magic);
  } catch (e) {
    if (!(e instanceof TandemError) || e.details.reason !== 'missing') throw e;
    throw new TandemError(
      'TANDEM_ERR_BAD_DATA',
      `${op}: ${plain}(.gz) is missing: install the Debian package ${FASHION_MNIST_PACKAGE} (apt-get install ${FASHION_MNIST_PACKAGE}), or pass the directory that holds the IDX files`,
      { file: plain, reason: 'missing', package: FASHION_MNIST_PACKAGE },
      { cause: e },
    );
  }
}

async function loadSplit(dir: string, prefix: 'train' | 't10k'): Promise<LabeledImages> {
  const op = 'loadFashionMnist';
  const [img, lab] = await Promise.all([
    readFirst(op, dir, `${prefix}-images-idx3-ubyte`, IDX_IMAGES_MAGIC),
    readFirst(op, dir, `${prefix}-labels-idx1-ubyte`, IDX_LABELS_MAGIC),
  ]);
  const [count, height, width] = img.dims as [number, number, number];
  const file = join(dir, `${prefix}-labels-idx1-ubyte`);
  if (lab.dims[0] !== count) {
    throw badData(op, file, 'mismatch', `${lab.dims[0]} labels for ${count} images`, {
      labels: lab.dims[0],
      images: count,
    });
  }
  const labels = new Int32Array(count);
  for (let i = 0; i < count; i++) {
    const l = lab.data[i]!;
    if (l >= FASHION_MNIST_CLASSES)
      throw badData(
        op,
        file,
        'label',
        `label ${l} at ${i} is not a class (0..${FASHION_MNIST_CLASSES - 1})`,
        { index: i, label: l },
      );
    labels[i] = l;
  }
  const images = await bytesToUnit(img.data);
  return { images, labels, count, height, width, shape: [count, 1, height, width] };
}

/**
 * Fashion-MNIST's train (60,000) and test (10,000) splits from `dir` (Debian's dataset-fashion-mnist
 * puts the gzip-compressed IDX files in /usr/share/datasets/fashion-mnist; uncompressed ones are
 * taken too): images [n, 1, 28, 28] in [0, 1], labels 0..9.
 */
export async function loadFashionMnist(dir: string = FASHION_MNIST_DIR): Promise<FashionMnist> {
  const [train, test] = await Promise.all([loadSplit(dir, 'train'), loadSplit(dir, 't10k')]);
  return { train, test };
}
