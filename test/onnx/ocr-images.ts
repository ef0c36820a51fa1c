/** Synthetic inputs for the PaddleOCR model tests (CPU and WebGPU). */

/**
 * Normalized NCHW images with dark strokes on a light background (bars of a "word" plus noise), so the
 * detector's map and the recognizer's classes take values across their range rather than all ~0.
 */
export function textLikeImage(dims: readonly number[], rng: () => number): Float32Array {
  const [n, c, h, w] = dims as [number, number, number, number];
  const x = new Float32Array(n * c * h * w);
  for (let b = 0; b < n; b++)
    for (let y = 0; y < h; y++)
      for (let i = 0; i < w; i++) {
        const ink =
          y >= h * 0.35 &&
          y < h * 0.65 &&
          i >= w * 0.1 &&
          i < w * 0.9 &&
          (((i + 3 * b) >> 2) % 2 === 0 || y % 8 < 2);
        for (let k = 0; k < c; k++)
          x[((b * c + k) * h + y) * w + i] = (ink ? -1.8 : 1.8) + 0.2 * (rng() - 0.5);
      }
  return x;
}

/** 5x7 bitmaps of the digits, one string of 5 bits per row. */
const DIGITS: Readonly<Record<string, readonly string[]>> = {
  '0': ['01110', '10001', '10011', '10101', '11001', '10001', '01110'],
  '1': ['00100', '01100', '00100', '00100', '00100', '00100', '01110'],
  '2': ['01110', '10001', '00001', '00010', '00100', '01000', '11111'],
  '3': ['11110', '00001', '00001', '01110', '00001', '00001', '11110'],
  '4': ['00010', '00110', '01010', '10010', '11111', '00010', '00010'],
  '5': ['11111', '10000', '11110', '00001', '00001', '10001', '01110'],
  '6': ['00110', '01000', '10000', '11110', '10001', '10001', '01110'],
  '7': ['11111', '00001', '00010', '00100', '01000', '01000', '01000'],
  '8': ['01110', '10001', '10001', '01110', '10001', '10001', '01110'],
  '9': ['01110', '10001', '10001', '01111', '00001', '00010', '01100'],
};

/**
 * A recognizer crop [1, 3, h, w] (normalized as PaddleOCR does: white 1, black −1) with `text` (digits)
 * drawn in a 5x7 font scaled by `scale`, centred vertically, plus a little noise: something the
 * recognizer reads as characters, so the decoded text is not empty.
 */
export function digitCrop(
  text: string,
  h: number,
  w: number,
  scale: number,
  rng: () => number,
): Float32Array {
  const x = new Float32Array(3 * h * w);
  const top = Math.floor((h - 7 * scale) / 2);
  for (let y = 0; y < h; y++)
    for (let i = 0; i < w; i++) {
      const k = Math.floor((i - scale * 2) / (6 * scale));
      const glyph = DIGITS[text[k] ?? ''];
      const gx = Math.floor((i - scale * 2 - k * 6 * scale) / scale);
      const gy = Math.floor((y - top) / scale);
      const ink =
        glyph !== undefined && i >= scale * 2 && gy >= 0 && gy < 7 && gx < 5 && glyph[gy]![gx] === '1';
      for (let c = 0; c < 3; c++) x[(c * h + y) * w + i] = (ink ? -0.9 : 0.9) + 0.1 * (rng() - 0.5);
    }
  return x;
}

/**
 * An RGB image as it would come from a decoded PNG (H×W×3 bytes, interleaved): `text` (digits) in the
 * 5x7 font scaled by `scale`, dark on a light, slightly tinted background with noise (every channel
 * different, so a channel swap shows): something the detector marks as text.
 */
export function textLikePixels(
  h: number,
  w: number,
  rng: () => number,
  text = '2026',
  scale = 3,
): Uint8Array {
  const px = new Uint8Array(h * w * 3);
  const top = Math.floor((h - 7 * scale) / 2);
  const left = Math.floor((w - text.length * 6 * scale) / 2);
  for (let y = 0; y < h; y++)
    for (let i = 0; i < w; i++) {
      const k = Math.floor((i - left) / (6 * scale));
      const glyph = i >= left ? DIGITS[text[k] ?? ''] : undefined;
      const gx = Math.floor((i - left - k * 6 * scale) / scale);
      const gy = Math.floor((y - top) / scale);
      const ink = glyph !== undefined && gy >= 0 && gy < 7 && gx < 5 && glyph[gy]![gx] === '1';
      const base = ink ? [30, 40, 55] : [235, 225, 210];
      for (let c = 0; c < 3; c++)
        px[(y * w + i) * 3 + c] = Math.max(0, Math.min(255, Math.round(base[c]! + 24 * (rng() - 0.5))));
    }
  return px;
}
