/** The CPU kernels' bulk f16/bf16 converters must agree bit for bit with core's scalar ones. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bf16ToF32, f16ToF32, f32ToBf16, f32ToF16 } from '../../src/core/dtype.js';
import { decodeHalf, encodeHalf } from '../../src/kernels/common/cpu-float.js';
import { seededRandom } from '../../src/core/seeded-random.js';

/** Specials (zeros, infinities, NaN, overflow, subnormals, ties) plus random bit patterns of every exponent. */
function probeValues(): Float32Array {
  const specials = [
    0,
    -0,
    Infinity,
    -Infinity,
    NaN,
    65504,
    65520,
    65519.99,
    1e9,
    2 ** -24,
    2 ** -25,
    3 * 2 ** -26,
    2 ** -14,
    6e-8,
    1 + 2 ** -11,
    1 + 3 * 2 ** -11,
    1 + 2 ** -8,
    1 + 3 * 2 ** -8,
    -2.5,
    1 / 3,
  ];
  const rnd = seededRandom(11);
  const bits = Uint32Array.from({ length: 200_000 }, () => Math.floor(rnd() * 2 ** 32));
  const out = new Float32Array(specials.length + bits.length);
  out.set(specials);
  out.set(new Float32Array(bits.buffer), specials.length);
  return out;
}

void describe('bulk half-precision converters', () => {
  const values = probeValues();
  for (const [dtype, encode, decode] of [
    ['f16', f32ToF16, f16ToF32],
    ['bf16', f32ToBf16, bf16ToF32],
  ] as const) {
    void it(`${dtype}: encodeHalf equals core's scalar encoder (NaN stays NaN)`, () => {
      const got = new Uint16Array(values.length);
      encodeHalf(dtype, values, got);
      for (let i = 0; i < values.length; i++) {
        const want = encode(values[i]!);
        if (Number.isNaN(values[i])) assert.ok(Number.isNaN(decode(got[i]!)), `NaN at ${i}`);
        else
          assert.equal(
            got[i],
            want,
            `${dtype}(${values[i]}) = ${got[i]!.toString(16)}, want ${want.toString(16)}`,
          );
      }
    });
    void it(`${dtype}: decodeHalf equals core's scalar decoder for all 65536 words`, () => {
      const words = Uint16Array.from({ length: 65536 }, (_, i) => i);
      const got = new Float32Array(65536);
      decodeHalf(dtype, words, got);
      for (let h = 0; h < 65536; h++)
        assert.ok(
          Object.is(got[h], Math.fround(decode(h))) || (Number.isNaN(got[h]) && Number.isNaN(decode(h))),
          `word ${h}`,
        );
    });
  }
});
