/**
 * linear_dw's bias gradient on CUDA (the column sum of dy, linear_dw/cuda.ts `columnSum`) on the host
 * emulator: the real kernel texts, launch geometry and parameters. 16-bit dy whose rows are whole
 * 16-byte vectors takes the vector text (8 columns a thread), other widths and dtypes the scalar one;
 * both against a float64 sum of the same stored values, overwriting and accumulating, db poisoned
 * first. Widths straddle the vector text's 256-column blocks (264: a block with 8 live columns). The
 * GPU runs (cuda-conformance's linear_dw cases, bench/nn-linear.ts) check the hardware.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type DType, bytesPerElement, fromNumbers, hostView, toNumbers } from '../../src/core/dtype.js';
import { fillRandom } from '../../src/core/seeded-random.js';
import type { CudaNative } from '../../src/devices/cuda/kernel-api.js';
import { columnSum } from '../../src/kernels/linear_dw/cuda.js';
import { hostCudaUnavailable, runNativeOnHost } from './cuda-emu/host-cuda.js';

const unavailable = hostCudaUnavailable();
if (unavailable) console.log(`# skip linear column sum CUDA emulation: ${unavailable}`);

const CASES: ReadonlyArray<{ dtype: DType; m: number; n: number; accumulate: boolean; vector: boolean }> = [
  { dtype: 'bf16', m: 300, n: 264, accumulate: false, vector: true },
  { dtype: 'f16', m: 97, n: 8, accumulate: true, vector: true },
  { dtype: 'bf16', m: 1037, n: 520, accumulate: true, vector: true },
  { dtype: 'bf16', m: 37, n: 50, accumulate: false, vector: false },
  { dtype: 'f32', m: 65, n: 72, accumulate: false, vector: false },
];

/** Random values stored in the dtype's own bytes, and the values those bytes hold. */
function stored(dtype: DType, count: number, seed: number): { bytes: Uint8Array; values: Float64Array } {
  const view = hostView(dtype, new ArrayBuffer(count * bytesPerElement(dtype)), 0, count);
  fromNumbers(dtype, fillRandom(new Float32Array(count), seed), view);
  return {
    bytes: new Uint8Array(view.buffer, 0, count * bytesPerElement(dtype)),
    values: toNumbers(dtype, view),
  };
}

void describe('linear_dw column sum on the host CUDA emulator', { skip: unavailable ?? false }, () => {
  for (const c of CASES) {
    void it(`${c.dtype} [${c.m},${c.n}] accumulate ${c.accumulate}: ${c.vector ? 'vector' : 'scalar'} text`, () => {
      const dy = stored(c.dtype, c.m * c.n, 5);
      const old = stored(c.dtype, c.n, 6);
      const e = bytesPerElement(c.dtype);
      // Without accumulate db starts as NaN words (all ones): every element must be written.
      const db = c.accumulate ? old.bytes : new Uint8Array(c.n * e).fill(0xff);
      const native: CudaNative = {
        kind: 'native',
        run: (ctx, args) => columnSum(ctx, args[0]!, args[1]!, c.accumulate),
      };
      const { outputs, entries } = runNativeOnHost(
        native,
        [
          { shape: [c.m, c.n], dtype: c.dtype, bytes: c.m * c.n * e },
          { shape: [c.n], dtype: c.dtype, bytes: c.n * e },
        ],
        [dy.bytes, db],
        {},
      );
      assert.deepEqual(entries, [
        c.vector ? 'tdm_column_partial_v8' : 'tdm_column_partial',
        'tdm_column_final',
      ]);
      const got = toNumbers(c.dtype, hostView(c.dtype, Uint8Array.from(outputs[1]!).buffer, 0, c.n));
      for (let j = 0; j < c.n; j++) {
        let want = c.accumulate ? old.values[j]! : 0;
        let mag = Math.abs(want);
        for (let i = 0; i < c.m; i++) {
          want += dy.values[i * c.n + j]!;
          mag += Math.abs(dy.values[i * c.n + j]!);
        }
        // f32 partial sums, one rounding to the dtype on store.
        const tol =
          mag * (c.m + 2) * 2 ** -24 +
          Math.abs(want) * 2 ** -(c.dtype === 'f32' ? 23 : c.dtype === 'f16' ? 10 : 7);
        assert.ok(Math.abs(got[j]! - want) <= tol, `db[${j}] = ${got[j]}, want ${want} ± ${tol}`);
      }
    });
  }
});
