/**
 * f16/bf16 array conversions: the table and bit-view paths give the per-element functions' results
 * exactly, and the encodings are the nearest representable value with ties to even (checked against the
 * neighbouring codes in float64, independently of how the encoder computes it).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bitsAt } from '../../src/core/seeded-random.js';
import { fromNumbers, toNumbers } from '../../src/core/dtype.js';
import {
  bf16ToF32,
  decodeHalves,
  encodeHalves,
  f16ToF32,
  f32ToBf16,
  f32ToF16,
  halvesToF32,
  type HalfDType,
} from '../../src/core/half.js';

const ONE: Record<HalfDType, { dec: (h: number) => number; enc: (x: number) => number }> = {
  f16: { dec: f16ToF32, enc: f32ToF16 },
  bf16: { dec: bf16ToF32, enc: f32ToBf16 },
};

const same = (a: number, b: number): boolean => Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b));

/** f32 bit patterns: random ones, and the edges (zeros, Inf, NaN, subnormals, rounding ties, overflow). */
function samples(): Float32Array {
  const n = 1 << 18;
  const bits = new Uint32Array(n + 64);
  for (let i = 0; i < n; i++) bits[i] = bitsAt(11, i);
  const edges = [
    0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00001, 0x7f800001, 0x00000001, 0x807fffff,
    // f16: the largest finite (65504), the first value that rounds to Inf, the smallest subnormal and half of it
    0x477fe000,
    0x477ff000, 0x477fefff, 0x33800000, 0x33000000, 0x33000001, 0x38800000, 0x387fc000,
    // ties at the f16 and bf16 rounding positions, odd and even
    0x3f801000, 0x3f803000, 0x3f808000, 0x3f818000, 0x3f800fff, 0x3f807fff, 0x7f7fffff, 0x7f7f8000,
  ];
  edges.forEach((b, i) => (bits[n + i] = b));
  return new Float32Array(bits.buffer);
}

for (const dtype of ['f16', 'bf16'] as const) {
  void test(`${dtype}: decoding every 16-bit word into f32 and f64 arrays equals the per-element decode`, () => {
    const words = new Uint16Array(65536).map((_, i) => i);
    const f32 = new Float32Array(65536).fill(NaN);
    const f64 = new Float64Array(65536).fill(7);
    decodeHalves(dtype, words, f32);
    decodeHalves(dtype, words, f64);
    const viaDtype = toNumbers(dtype, words);
    const fresh = halvesToF32(dtype, words);
    for (let h = 0; h < 65536; h++) {
      const want = ONE[dtype].dec(h);
      assert.ok(same(f32[h]!, want), `f32 ${h}: ${f32[h]} vs ${want}`);
      assert.ok(same(f64[h]!, want), `f64 ${h}: ${f64[h]} vs ${want}`);
      assert.ok(same(viaDtype[h]!, want) && same(fresh[h]!, want), `word ${h}`);
    }
  });

  void test(`${dtype}: encoding a Float32Array, a Float64Array and a plain array equals the per-element encode`, () => {
    const x = samples();
    const fromF32 = new Uint16Array(x.length);
    encodeHalves(dtype, x, fromF32);
    const fromF64 = new Uint16Array(x.length);
    fromNumbers(dtype, Float64Array.from(x), fromF64);
    const plain = Array.from(x.subarray(0, 4096));
    const fromPlain = new Uint16Array(plain.length);
    encodeHalves(dtype, plain, fromPlain);
    for (let i = 0; i < x.length; i++) {
      const want = ONE[dtype].enc(x[i]!);
      assert.equal(fromF32[i], want, `value ${x[i]} (bits ${new Uint32Array(x.buffer)[i]!.toString(16)})`);
      assert.equal(fromF64[i], want);
      if (i < plain.length) assert.equal(fromPlain[i], want);
    }
    // A view that does not start at its buffer's first element.
    const tail = new Uint16Array(100);
    encodeHalves(dtype, x.subarray(17, 117), tail);
    for (let i = 0; i < 100; i++) assert.equal(tail[i], fromF32[17 + i]);
  });

  void test(`${dtype}: each encoding is the nearest code, ties to the even one`, () => {
    const x = samples();
    const codes = new Uint16Array(x.length);
    encodeHalves(dtype, x, codes);
    const dec = ONE[dtype].dec;
    let checked = 0;
    for (let i = 0; i < x.length; i++) {
      const v = x[i]!;
      const c = codes[i]!;
      if (!Number.isFinite(v)) {
        assert.ok(same(dec(c), Number.isNaN(v) ? NaN : v), `non-finite ${v}`);
        continue;
      }
      const got = dec(c);
      if (!Number.isFinite(got)) {
        // Overflow: v is at least halfway past the largest finite code (ties go to Inf, its even neighbour).
        const maxFinite = dec((c & 0x8000) | (dtype === 'f16' ? 0x7bff : 0x7f7f));
        const step = maxFinite - dec((c & 0x8000) | (dtype === 'f16' ? 0x7bfe : 0x7f7e));
        assert.ok(Math.abs(v) >= Math.abs(maxFinite) + Math.abs(step) / 2, `${v} overflowed`);
        continue;
      }
      // Neighbouring codes of the same sign (towards and away from zero) are no nearer.
      const err = Math.abs(v - got);
      for (const n of [c - 1, c + 1]) {
        if ((n & 0x7fff) === 0x7fff || n < 0 || (n & 0x8000) !== (c & 0x8000)) continue;
        const other = dec(n);
        if (!Number.isFinite(other)) continue;
        const e = Math.abs(v - other);
        assert.ok(err <= e, `${v}: code ${c} (${got}) is farther than ${n} (${other})`);
        if (err === e && err !== 0) assert.equal(c & 1, 0, `${v}: a tie went to the odd code ${c}`);
      }
      checked++;
    }
    assert.ok(checked > x.length / 2);
  });
}
