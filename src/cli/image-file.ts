/**
 * `tandem infer --image`: a PNG or JPEG file decoded on the client (pngjs, jpeg-js: pure JS) into the
 * uint8 RGB pixels [H, W, 3] an onnx model with a `preprocess` config takes; the service normalizes
 * them on the device. The format is told by the file's first bytes, not its name.
 */
import { readFileSync } from 'node:fs';
import { TandemError } from '../core/errors.js';

export interface Pixels {
  readonly height: number;
  readonly width: number;
  /** RGB, row by row, 3 bytes a pixel. */
  readonly data: Uint8Array;
}

const PNG_MAGIC = [0x89, 0x50, 0x4e, 0x47];
const JPEG_MAGIC = [0xff, 0xd8, 0xff];
/** A decoded image this large would be refused by the service anyway (its per-request element limit). */
const MAX_MEGAPIXELS = 16;

const bad = (file: string, why: string) =>
  new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `--image ${file}: ${why}`);

/**
 * RGBA to RGB. A transparent pixel shows what is under it: white, as a page or a screen would, so a
 * transparent-background text image reads as dark text on white rather than on black.
 */
function dropAlpha(rgba: Uint8Array, pixels: number): Uint8Array {
  const out = new Uint8Array(pixels * 3);
  for (let i = 0; i < pixels; i++) {
    const a = rgba[i * 4 + 3]!;
    for (let c = 0; c < 3; c++) out[i * 3 + c] = Math.round((rgba[i * 4 + c]! * a + 255 * (255 - a)) / 255);
  }
  return out;
}

export async function decodeImageFile(file: string): Promise<Pixels> {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw bad(file, code === 'ENOENT' ? 'no such file' : `cannot be read (${code ?? (e as Error).message})`);
  }
  const starts = (magic: number[]) => magic.every((b, i) => bytes[i] === b);
  try {
    if (starts(PNG_MAGIC)) {
      const { PNG } = (await import('pngjs')).default;
      // pngjs gives 8-bit RGBA whatever the file's colour type and depth.
      const png = PNG.sync.read(bytes);
      return { height: png.height, width: png.width, data: dropAlpha(png.data, png.width * png.height) };
    }
    if (starts(JPEG_MAGIC)) {
      const jpeg = (await import('jpeg-js')).default;
      const img = jpeg.decode(bytes, {
        useTArray: true,
        formatAsRGBA: false,
        maxResolutionInMP: MAX_MEGAPIXELS,
      });
      return { height: img.height, width: img.width, data: img.data };
    }
  } catch (e) {
    if (e instanceof TandemError) throw e;
    throw bad(file, `cannot be decoded (${(e as Error).message})`);
  }
  throw bad(file, 'is neither a PNG nor a JPEG file');
}
