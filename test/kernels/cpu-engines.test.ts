/** The GEMM engines and BLAS extras below the kernel layer: staging blocks, in-place mode, Cholesky pieces. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadOpenBlas } from '../../src/devices/cpu/openblas.js';
import { loadWasmGemm } from '../../src/devices/cpu/wasm/gemm-wasm.js';
import { seededRandom } from '../../src/core/seeded-random.js';
import { gemmValues } from '../../src/kernels/gemm/reference.js';

function random(count: number, seed: number): Float32Array {
  const rnd = seededRandom(seed);
  return Float32Array.from({ length: count }, () => (rnd() < 0.5 ? -1 : 1) * (0.125 + 0.875 * rnd()));
}

function assertClose(got: ArrayLike<number>, want: ArrayLike<number>, tol: number, what: string): void {
  assert.equal(got.length, want.length, `${what}: length`);
  for (let i = 0; i < want.length; i++) {
    assert.ok(
      Math.abs(got[i]! - want[i]!) <= tol * (1 + Math.abs(want[i]!)),
      `${what}[${i}] = ${got[i]}, want ${want[i]}`,
    );
  }
}

const wasm = loadWasmGemm(undefined, 20_000);
void describe('wasm gemm engine', { skip: wasm.reason ?? false }, () => {
  const [m, n, k] = [150, 140, 70];
  for (const [ta, tb] of [
    [false, false],
    [true, false],
    [false, true],
    [true, true],
  ] as const) {
    void it(`cuts a problem over its staging budget into blocks (transA ${ta}, transB ${tb}, beta 0.5)`, () => {
      const a = random(m * k, 1);
      const b = random(k * n, 2);
      const c = random(m * n, 3);
      const want = gemmValues(Float64Array.from(a), Float64Array.from(b), Float64Array.from(c), m, n, k, {
        alpha: -1.25,
        beta: 0.5,
        transA: ta,
        transB: tb,
      });
      wasm.gemm!.sgemm(ta, tb, m, n, k, -1.25, a, ta ? m : k, b, tb ? k : n, 0.5, c, n);
      assertClose(c, want, 1e-5 * k, 'c');
    });
  }

  void it('dgemm: blocks, transposes and beta in float64 precision', () => {
    const a = Float64Array.from(random(k * m, 6));
    const b = Float64Array.from(random(n * k, 7));
    const c = Float64Array.from(random(m * n, 8));
    const p = { alpha: 0.75, beta: -2, transA: true, transB: true };
    const want = gemmValues(a, b, c, m, n, k, p);
    wasm.gemm!.dgemm(true, true, m, n, k, 0.75, a, m, b, k, -2, c, n);
    assertClose(c, want, 1e-14 * k, 'c');
  });

  void it('computes in place on operands inside its memory', () => {
    const g = wasm.gemm!;
    g.ensureBytes(g.dataOffset + 4 * (m * k + k * n + m * n));
    const heap = g.memory.buffer;
    const a = new Float32Array(heap, g.dataOffset, m * k);
    const b = new Float32Array(heap, g.dataOffset + 4 * m * k, k * n);
    const c = new Float32Array(heap, g.dataOffset + 4 * (m * k + k * n), m * n);
    a.set(random(m * k, 4));
    b.set(random(k * n, 5));
    c.fill(NaN);
    const want = gemmValues(Float64Array.from(a), Float64Array.from(b), null, m, n, k, {
      alpha: 1,
      beta: 0,
      transA: false,
      transB: false,
    });
    g.sgemmInPlace(false, false, m, n, k, 1, a, k, b, n, 0, c, n);
    assertClose(c, want, 1e-5 * k, 'c');
  });
});

const openblas = loadOpenBlas();
void describe('OpenBLAS Cholesky pieces (row-major)', { skip: openblas.reason ?? false }, () => {
  const blas = openblas.blas!;
  const n = 37;
  // A = L L^T with a well-conditioned random lower-triangular L.
  const l = new Float64Array(n * n);
  const rnd = seededRandom(7);
  for (let i = 0; i < n; i++) for (let j = 0; j <= i; j++) l[i * n + j] = i === j ? 2 + rnd() : rnd() - 0.5;
  const spd = gemmValues(l, l, null, n, n, n, { alpha: 1, beta: 0, transA: false, transB: true });
  const lower = (x: ArrayLike<number>): number[] =>
    Array.from(x).map((v, idx) => (idx % n <= Math.floor(idx / n) ? v : 0));

  void it('dpotrf and spotrf return L (lower) and info 0', () => {
    const d = Float64Array.from(spd);
    assert.equal(blas.lapack.dpotrf('lower', n, d, n), 0);
    assertClose(lower(d), l, 1e-12, 'dpotrf');
    const s = Float32Array.from(spd);
    assert.equal(blas.lapack.spotrf('lower', n, s, n), 0);
    assertClose(lower(s), l, 1e-4, 'spotrf');
  });

  void it('potrf reports the first non-positive leading minor', () => {
    assert.equal(blas.lapack.dpotrf('lower', 2, Float64Array.of(1, 2, 2, 1), 2), 2);
  });

  void it('dtrsm solves L X = B and dsyrk forms A A^T (lower)', () => {
    const b = Float64Array.from(random(n * 5, 8));
    const x = Float64Array.from(b);
    blas.lapack.dtrsm('left', 'lower', false, false, n, 5, 1, l, n, x, 5);
    const lx = gemmValues(l, x, null, n, 5, n, { alpha: 1, beta: 0, transA: false, transB: false });
    assertClose(lx, b, 1e-12, 'L X');
    const c = new Float64Array(n * n);
    blas.lapack.dsyrk('lower', false, n, n, 1, l, n, 0, c, n);
    assertClose(lower(c), lower(spd), 1e-12, 'syrk');
  });
});
