/**
 * mc_european_batch: validation, the CPU kernel against the float64 reference on random terms (rows
 * summed per option, outputs poisoned first), and the CUDA program on the host emulator (cuda-emu/) with
 * the PTX approximations swapped for libm: against the reference within f32 error, and bit for bit
 * against the single-option mc_european program on the same option (the batch reuses its engine).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isTandemError } from '../../src/core/errors.js';
import type { CudaNative, CudaProgram } from '../../src/devices/cuda/kernel-api.js';
import type { TensorDesc } from '../../src/devices/device.js';
import { mcRows, mcScalars } from '../../src/kernels/mc_common/def.js';
import { mcSpec, streamCount, type McSpec } from '../../src/kernels/mc_common/engine.js';
import { mcEuropeanCuda } from '../../src/kernels/mc_common/cuda.js';
import { mcEuropeanBatchCpu } from '../../src/kernels/mc_european_batch/cpu.js';
import { mcEuropeanBatchCuda } from '../../src/kernels/mc_european_batch/cuda.js';
import { mcEuropeanBatchDef } from '../../src/kernels/mc_european_batch/def.js';
import { optionRows, TERM_COLUMNS, writeTerms } from '../../src/kernels/mc_european_batch/layout.js';
import { mcEuropeanBatchReference } from '../../src/kernels/mc_european_batch/reference.js';
import { cpuContext } from './cpu-harness.js';
import { hostCudaUnavailable, runNativeOnHost } from './cuda-emu/host-cuda.js';

function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Random options: calls and puts, antithetic or not, path counts not multiples of 4, seeds over 2^32. */
function randomSpecs(n: number, seed: number, maxPaths: number): McSpec[] {
  const r = lcg(seed);
  return Array.from({ length: n }, (_, i) =>
    mcSpec({
      kind: 'european',
      right: r() < 0.5 ? 'call' : 'put',
      spot: 50 + 100 * r(),
      strike: 50 + 100 * r(),
      rate: 0.1 * r() - 0.02,
      vol: 0.05 + 0.6 * r(),
      maturity: 0.1 + 3 * r(),
      dividend: 0.05 * r(),
      steps: 1,
      paths: 2 + Math.floor(r() * maxPaths) + (i % 3),
      antithetic: r() < 0.5,
      seed: Math.floor(r() * 2 ** 40),
    }),
  );
}

function pack(specs: readonly McSpec[]): { terms: Float64Array; rows: number } {
  const terms = new Float64Array(specs.length * TERM_COLUMNS);
  let rows = 0;
  specs.forEach((s, i) => (rows = writeTerms(terms, i, s, rows)));
  return { terms, rows };
}

function perOption(terms: Float64Array, rows: number, out: ArrayLike<number>): number[][] {
  const n = terms.length / TERM_COLUMNS;
  return Array.from({ length: n }, (_, i) => {
    const [a, b] = optionRows(terms, n, rows, i);
    const s = [0, 0, 0];
    for (let r = a; r < b; r++) for (let c = 0; c < 3; c++) s[c]! += out[3 * r + c]!;
    return s;
  });
}

const desc = (shape: number[], dtype: 'f32' | 'f64'): TensorDesc => ({
  shape,
  dtype,
  bytes: shape.reduce((a, b) => a * b, 1) * (dtype === 'f64' ? 8 : 4),
});
const ctx = cpuContext('ts');

void describe('mc_european_batch definition', () => {
  const ok = { terms: desc([3, TERM_COLUMNS], 'f64'), out: desc([5, 3], 'f32') };
  const bad: [string, Record<string, TensorDesc>, Record<string, number>, string][] = [
    ['f32 terms', { ...ok, terms: desc([3, TERM_COLUMNS], 'f32') }, {}, 'TANDEM_ERR_SHAPE'],
    [
      'terms with a missing column',
      { ...ok, terms: desc([3, TERM_COLUMNS - 1], 'f64') },
      {},
      'TANDEM_ERR_SHAPE',
    ],
    ['out of 4 columns', { ...ok, out: desc([5, 4], 'f32') }, {}, 'TANDEM_ERR_SHAPE'],
    ['fewer rows than options', { ...ok, out: desc([2, 3], 'f32') }, {}, 'TANDEM_ERR_SHAPE'],
    ['a scalar it does not take', ok, { first: 0 }, 'TANDEM_ERR_INVALID_ARGUMENT'],
    ['out missing', { terms: ok.terms }, {}, 'TANDEM_ERR_INVALID_ARGUMENT'],
  ];
  for (const [why, args, scalars, code] of bad) {
    void it(`rejects ${why}`, () => {
      assert.throws(
        () => mcEuropeanBatchDef.validate(args, scalars),
        (e: unknown) => isTandemError(e) && e.code === code,
      );
    });
  }
  void it('accepts a well-formed call', () => mcEuropeanBatchDef.validate(ok, {}));
});

void describe('mc_european_batch CPU kernel', () => {
  void it('matches the float64 reference on random terms, every option', () => {
    const specs = randomSpecs(9, 7, 30_000);
    const { terms, rows } = pack(specs);
    const out = new Float64Array(3 * rows).fill(NaN);
    mcEuropeanBatchCpu(
      [
        { data: terms, desc: desc([9, TERM_COLUMNS], 'f64') },
        { data: out, desc: desc([rows, 3], 'f64') },
      ],
      {},
      ctx,
    );
    const want = mcEuropeanBatchReference(terms);
    perOption(terms, rows, out).forEach(([sum, sumSq, count], i) => {
      const w = want[i]!;
      assert.equal(count, w.count, `option ${i} count`);
      assert.ok(
        Math.abs(sum! - w.sum) <= 1e-12 * Math.abs(w.sum) + 1e-9,
        `option ${i} sum ${sum} vs ${w.sum}`,
      );
      assert.ok(Math.abs(sumSq! - w.sumSq) <= 1e-12 * w.sumSq + 1e-9, `option ${i} sumSq`);
    });
  });

  void it('gives an option the rows of a one-task mc_european of it', () => {
    const [spec] = randomSpecs(1, 3, 200_000);
    assert.equal(pack([spec!]).rows, mcRows(streamCount(spec!)));
  });

  void it('rejects a terms table whose rows do not fit the output', () => {
    const { terms } = pack(randomSpecs(2, 5, 10_000));
    const out = new Float32Array(3 * 2);
    assert.throws(
      () =>
        mcEuropeanBatchCpu(
          [
            { data: terms, desc: desc([2, TERM_COLUMNS], 'f64') },
            { data: out, desc: desc([1, 3], 'f32') },
          ],
          {},
          ctx,
        ),
      (e: unknown) => isTandemError(e) && e.code === 'TANDEM_ERR_INVALID_ARGUMENT',
    );
  });
});

const unavailable = hostCudaUnavailable();

/** The kernel text with the inline PTX approximations replaced by libm (the emulator has no PTX). */
function emulated(p: CudaProgram): CudaNative {
  const source = p.source
    .replace(
      /static __device__ __forceinline__ float tdm_(lg2|ex2|sqrt|sin|cos)\(float x\) \{[^\n]*\n/g,
      (_m, f: string) => {
        const libm: Record<string, string> = {
          lg2: 'log2f',
          ex2: 'exp2f',
          sqrt: 'sqrtf',
          sin: 'sinf',
          cos: 'cosf',
        };
        return `static inline float tdm_${f}(float x) { return ${libm[f]}(x); }\n`;
      },
    )
    .replace(/__launch_bounds__\((\d+), \d+\)/g, '__launch_bounds__($1)');
  const program: CudaProgram = { ...p, source };
  return { kind: 'native', run: (ctx, a, s) => ctx.launch(program, a, s) };
}

void describe('mc_european_batch CUDA program on the host emulator', { skip: unavailable ?? false }, () => {
  void it('matches the reference within f32 error and the single-option kernel bit for bit', () => {
    // Path counts of one to three blocks per option, not multiples of 4: partial last streams.
    const specs = randomSpecs(4, 11, 9_000);
    const { terms, rows } = pack(specs);
    const outDesc = desc([rows, 3], 'f32');
    const termsBytes = new Uint8Array(terms.buffer.slice(0));
    const poison = new Uint8Array(new Float32Array(3 * rows).fill(NaN).buffer);
    const { outputs } = runNativeOnHost(
      emulated(mcEuropeanBatchCuda),
      [desc([specs.length, TERM_COLUMNS], 'f64'), outDesc],
      [termsBytes, poison],
      {},
    );
    const got = new Float32Array(outputs[1]!.buffer, outputs[1]!.byteOffset, 3 * rows);
    const want = mcEuropeanBatchReference(terms);
    perOption(terms, rows, got).forEach(([sum, sumSq, count], i) => {
      const w = want[i]!;
      assert.equal(count, w.count, `option ${i} count`);
      assert.ok(
        Math.abs(sum! - w.sum) <= 2e-4 * Math.abs(w.sum) + 1e-3,
        `option ${i} sum ${sum} vs ${w.sum}`,
      );
      assert.ok(
        Math.abs(sumSq! - w.sumSq) <= 2e-4 * w.sumSq + 1e-3,
        `option ${i} sumSq ${sumSq} vs ${w.sumSq}`,
      );
    });
    // Option 2 alone through mc_european: the same rows, bit for bit.
    const spec = specs[2]!;
    const streams = streamCount(spec);
    const single = runNativeOnHost(
      emulated(mcEuropeanCuda),
      [desc([mcRows(streams), 3], 'f32')],
      [new Uint8Array(new Float32Array(3 * mcRows(streams)).fill(NaN).buffer)],
      mcScalars(spec, 0, streams),
    );
    const [a, b] = optionRows(terms, specs.length, rows, 2);
    const mine = got.slice(3 * a, 3 * b);
    const theirs = new Float32Array(single.outputs[0]!.buffer, single.outputs[0]!.byteOffset, 3 * (b - a));
    assert.deepEqual([...mine], [...theirs]);
  });
});
