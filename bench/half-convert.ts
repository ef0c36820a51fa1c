/**
 * f16/bf16 array conversions (src/core/half.ts) beside a loop of the per-element functions, the path
 * every f16/bf16 input, output and weight took before: ns per element, median of `--reps`, on a
 * 16×3×640×640 float32 image batch (19.7 M values, PaddleOCR's detector at batch 16).
 *   node dist/bench/half-convert.js [--elements N] [--reps 7]
 */
import { parseArgs } from 'node:util';
import {
  bf16ToF32,
  decodeHalves,
  encodeHalves,
  f16ToF32,
  f32ToBf16,
  f32ToF16,
  type HalfDType,
} from '../src/core/half.js';

const { values } = parseArgs({
  options: {
    elements: { type: 'string', default: String(16 * 3 * 640 * 640) },
    reps: { type: 'string', default: '7' },
  },
});
const n = Number(values.elements);
const reps = Number(values.reps);
const x = new Float32Array(n);
for (let i = 0; i < n; i++) x[i] = 2 * Math.sin(0.37 * i) * Math.cos(0.011 * i) + 1e-3;
const words = new Uint16Array(n);
const back = new Float32Array(n);

function nsPerElement(f: () => void): number {
  const t: number[] = [];
  for (let r = 0; r < reps; r++) {
    const s = performance.now();
    f();
    t.push(performance.now() - s);
  }
  t.sort((a, b) => a - b);
  return (t[Math.floor(t.length / 2)]! * 1e6) / n;
}

const ONE: Record<HalfDType, { enc: (v: number) => number; dec: (h: number) => number }> = {
  f16: { enc: f32ToF16, dec: f16ToF32 },
  bf16: { enc: f32ToBf16, dec: bf16ToF32 },
};
for (const dtype of ['f16', 'bf16'] as const) {
  const { enc, dec } = ONE[dtype];
  const encodeEach = nsPerElement(() => {
    for (let i = 0; i < n; i++) words[i] = enc(x[i]!);
  });
  const encodeArray = nsPerElement(() => encodeHalves(dtype, x, words));
  const decodeEach = nsPerElement(() => {
    for (let i = 0; i < n; i++) back[i] = dec(words[i]!);
  });
  const decodeArray = nsPerElement(() => decodeHalves(dtype, words, back));
  console.log(
    JSON.stringify({
      dtype,
      elements: n,
      nsPerElement: { encodeEach, encodeArray, decodeEach, decodeArray },
      speedup: { encode: encodeEach / encodeArray, decode: decodeEach / decodeArray },
    }),
  );
}
