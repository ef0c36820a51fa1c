/**
 * The gemm job's data stream and its worker-side check: the stream is the same wherever it is made,
 * never zero, and the check kernel's references catch a wrong product in every dtype.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fromNumbers, hostView, toNumbers, bytesPerElement, type DType } from '../../src/core/dtype.js';
import type { CpuArg, CpuKernelContext } from '../../src/devices/cpu/kernel-api.js';
import { gemmJobCheck, gemmJobFill } from '../../src/service/jobs/types/gemm-cpu.js';
import {
  compareRows,
  fillUniform,
  regenerateRow,
  streamKey,
  uniformAt,
} from '../../src/service/jobs/types/gemm-data.js';

const ctx = {} as CpuKernelContext;
const arg = (dtype: DType, shape: number[]): CpuArg => {
  const size = shape.reduce((a, b) => a * b, 1);
  return {
    data: hostView(dtype, new SharedArrayBuffer(size * bytesPerElement(dtype)), 0, size),
    desc: { shape, dtype, bytes: size * bytesPerElement(dtype) },
  };
};

void test('gemm data: one stream per (seed, matrix), in [-1, 1), never zero, the same in a worker and on the host', () => {
  assert.notEqual(streamKey(1, 0), streamKey(1, 1));
  assert.notEqual(streamKey(1, 0), streamKey(2, 0));
  const key = streamKey(7, 1);
  let sum = 0;
  for (let i = 0; i < 100_000; i++) {
    const v = uniformAt(key, i);
    assert.ok(v >= -1 && v < 1 && v !== 0);
    sum += v;
  }
  assert.ok(Math.abs(sum / 100_000) < 0.01, `mean ${sum / 100_000}`);
  for (const dtype of ['f32', 'f64', 'f16', 'bf16'] as const) {
    const n = 33;
    const x = arg(dtype, [3, n]);
    gemmJobFill([x], { key, first: 2 * n }, ctx);
    const host = hostView(dtype, new ArrayBuffer(3 * n * bytesPerElement(dtype)), 0, 3 * n);
    fillUniform(dtype, host, key, 2 * n);
    assert.deepEqual(Array.from(x.data), Array.from(host));
    assert.deepEqual(
      Array.from(regenerateRow(dtype, n, key, 3)),
      Array.from(toNumbers(dtype, x.data.subarray(n, 2 * n))),
    );
  }
});

void test('gemm check kernel: references match an exact product and catch a wrong one', () => {
  for (const dtype of ['f32', 'f64', 'f16', 'bf16'] as const) {
    const n = 48;
    const keyA = streamKey(3, 0);
    const keyB = streamKey(3, 1);
    const b = arg(dtype, [n, n]);
    fillUniform(dtype, b.data, keyB, 0);
    const B = toNumbers(dtype, b.data);
    // Panel of rows 16..31 of C = A·B, rounded to the dtype.
    const c = arg(dtype, [16, n]);
    const exact = new Float64Array(16 * n);
    for (let i = 0; i < 16; i++) {
      const a = regenerateRow(dtype, n, keyA, 16 + i);
      for (let q = 0; q < n; q++) for (let j = 0; j < n; j++) exact[i * n + j] += a[q]! * B[q * n + j]!;
    }
    fromNumbers(dtype, exact, c.data);
    const rows = [0, 5, 15];
    const run = () => {
      const out = arg('f64', [2 * rows.length, n]);
      gemmJobCheck([c, b, out], { key: keyA, row0: 16, rows: rows.join(',') }, ctx);
      const d = out.data as Float64Array;
      const got = rows.map((_, i) => d.subarray(i * n, (i + 1) * n));
      const refs = rows.map((_, i) => d.subarray((rows.length + i) * n, (rows.length + i + 1) * n));
      return compareRows(dtype, n, got, refs);
    };
    const good = run();
    assert.ok(good.ok, `${dtype}: ${JSON.stringify(good)}`);
    assert.equal(good.rowsChecked, 3);
    // One wrong element in a sampled row (row 5 of the panel): 5 % of the row's scale.
    const wrong = toNumbers(dtype, c.data.subarray(5 * n, 6 * n));
    wrong[7] = wrong[7]! + 0.05 * Math.max(...Array.from(wrong, Math.abs));
    fromNumbers(dtype, wrong, c.data.subarray(5 * n, 6 * n));
    const bad = run();
    assert.equal(bad.ok, false, `${dtype}: ${JSON.stringify(bad)}`);
  }
});
