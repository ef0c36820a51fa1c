/**
 * `tandem infer --tensor`: a NumPy .npy file (version 1-3, C order, little-endian float32 or uint8)
 * read as a tensor's shape and raw bytes, sent as they are in a binary request. Other dtypes are refused
 * by name rather than converted: the service takes float32 values or (an image input) uint8 pixels.
 */
import { readFileSync } from 'node:fs';
import { TandemError } from '../core/errors.js';

export interface NpyTensor {
  readonly shape: number[];
  readonly dtype: 'float32' | 'uint8';
  readonly bytes: Uint8Array;
}

const MAGIC = '\x93NUMPY';

export function readNpyFile(file: string): NpyTensor {
  const bad = (why: string) => new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `--tensor ${file}: ${why}`);
  let buf: Buffer;
  try {
    buf = readFileSync(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw bad(code === 'ENOENT' ? 'no such file' : `cannot be read (${code ?? (e as Error).message})`);
  }
  if (buf.length < 10 || buf.subarray(0, 6).toString('latin1') !== MAGIC) throw bad('is not a .npy file');
  const major = buf[6]!;
  const wide = major >= 2;
  const headerLength = wide ? buf.readUInt32LE(8) : buf.readUInt16LE(8);
  const start = (wide ? 12 : 10) + headerLength;
  if (start > buf.length) throw bad('its header runs past the end of the file');
  const header = buf.subarray(wide ? 12 : 10, start).toString(major >= 3 ? 'utf8' : 'latin1');
  // The header is a Python dict literal: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
  const descr = /'descr':\s*'([^']*)'/.exec(header)?.[1];
  const fortran = /'fortran_order':\s*(True|False)/.exec(header)?.[1];
  const shapeText = /'shape':\s*\(([^)]*)\)/.exec(header)?.[1];
  if (descr === undefined || fortran === undefined || shapeText === undefined)
    throw bad(`cannot read its header ${JSON.stringify(header.trim())}`);
  if (fortran === 'True') throw bad('is in Fortran order; save it C-ordered (np.ascontiguousarray)');
  const dtype = descr === '<f4' ? 'float32' : descr === '|u1' || descr === '<u1' ? 'uint8' : undefined;
  if (dtype === undefined) throw bad(`has dtype '${descr}'; give float32 ('<f4') or uint8 ('|u1')`);
  const shape = shapeText
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map(Number);
  if (shape.some((d) => !Number.isSafeInteger(d) || d < 0)) throw bad(`has a bad shape (${shapeText})`);
  const bytes = shape.reduce((a, b) => a * b, 1) * (dtype === 'float32' ? 4 : 1);
  if (buf.length - start !== bytes)
    throw bad(`holds ${buf.length - start} bytes of data, its shape [${shape.join(', ')}] needs ${bytes}`);
  return { shape, dtype, bytes: buf.subarray(start) };
}
