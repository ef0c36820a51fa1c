/**
 * The row-major → column-major mapping of the CUDA tile routines (tile-ops.ts), checked without a GPU:
 * cuBLAS trsm/syrk and cuSOLVER potrf are replaced by column-major reference implementations written
 * from their documented semantics, and the results compared with the CPU ops' row-major loops.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CudaContext } from '../../src/devices/cuda/context.js';
import { runTile } from '../../src/devices/cuda/tile-ops.js';
import { potrfTs, syrkTs, trsmTs } from '../../src/kernels/common/tile.js';

const mem = new Map<number, Float64Array>();
let nextPtr = 0x10000;
function put(x: Float64Array): number {
  const p = (nextPtr += 0x10000);
  mem.set(p, x);
  return p;
}
const at = (p: number): Float64Array => mem.get(p)!;

/** Column-major element (i, j) of a matrix with leading dimension ld. */
const cm = (x: Float64Array, ld: number) => ({
  get: (i: number, j: number) => x[i + j * ld]!,
  set: (i: number, j: number, v: number) => {
    x[i + j * ld] = v;
  },
});

/** Only the `uplo` triangle of a is read (1 = upper, 0 = lower), as cuBLAS does. */
function tri(a: Float64Array, lda: number, m: number, uplo: number, trans: number): number[][] {
  const A = cm(a, lda);
  const M = Array.from({ length: m }, () => new Array<number>(m).fill(0));
  for (let i = 0; i < m; i++)
    for (let j = 0; j < m; j++) {
      const inTri = uplo === 1 ? i <= j : i >= j;
      if (!inTri) continue;
      if (trans === 1) M[j]![i] = A.get(i, j);
      else M[i]![j] = A.get(i, j);
    }
  return M;
}

const fakeCublas = {
  trsm(
    _h: number,
    _f64: boolean,
    side: number,
    uplo: number,
    trans: number,
    diag: number,
    m: number,
    n: number,
    alpha: Float64Array | Float32Array,
    a: number,
    lda: number,
    b: number,
    ldb: number,
  ): void {
    assert.equal(side, 0, 'only left-side solves are used');
    assert.equal(diag, 0);
    const M = tri(at(a), lda, m, uplo, trans); // op(A), m x m, triangular
    const B = cm(at(b), ldb);
    for (let c = 0; c < n; c++) {
      // Solve M x = alpha b by elimination (M triangular: no pivoting needed).
      const x = Array.from({ length: m }, (_, i) => alpha[0]! * B.get(i, c));
      const upper = M.every((row, i) => row.every((v, j) => j >= i || v === 0));
      const order = upper ? [...Array(m).keys()].reverse() : [...Array(m).keys()];
      for (const i of order) {
        let s = x[i]!;
        for (let j = 0; j < m; j++) if (j !== i && (upper ? j > i : j < i)) s -= M[i]![j]! * x[j]!;
        x[i] = s / M[i]![i]!;
      }
      for (let i = 0; i < m; i++) B.set(i, c, x[i]!);
    }
  },
  syrk(
    _h: number,
    _f64: boolean,
    uplo: number,
    trans: number,
    n: number,
    k: number,
    alpha: Float64Array | Float32Array,
    a: number,
    lda: number,
    beta: Float64Array | Float32Array,
    c: number,
    ldc: number,
  ): void {
    const A = cm(at(a), lda);
    const C = cm(at(c), ldc);
    const opA = (i: number, p: number) => (trans === 1 ? A.get(p, i) : A.get(i, p)); // n x k
    for (let i = 0; i < n; i++)
      for (let j = 0; j < n; j++) {
        if (uplo === 1 ? i > j : i < j) continue;
        let s = 0;
        for (let p = 0; p < k; p++) s += opA(i, p) * opA(j, p);
        C.set(i, j, beta[0]! * C.get(i, j) + alpha[0]! * s);
      }
  },
};

const fakeSolver = {
  potrfBufferSize: () => 16,
  potrf(
    _h: number,
    _f64: boolean,
    uplo: number,
    n: number,
    a: number,
    _w: number,
    _lw: number,
    info: number,
  ): void {
    assert.equal(uplo, 1);
    const A = cm(at(a), n);
    // Upper Cholesky: A = Uᵀ U, U written into the upper triangle, the lower one untouched.
    for (let j = 0; j < n; j++) {
      let s = A.get(j, j);
      for (let p = 0; p < j; p++) s -= A.get(p, j) ** 2;
      if (!(s > 0)) {
        at(info)[0] = j + 1;
        return;
      }
      const d = Math.sqrt(s);
      A.set(j, j, d);
      for (let c = j + 1; c < n; c++) {
        let v = A.get(j, c);
        for (let p = 0; p < j; p++) v -= A.get(p, j) * A.get(p, c);
        A.set(j, c, v / d);
      }
    }
    at(info)[0] = 0;
  },
};

const context = {
  cublas: fakeCublas,
  cusolver: fakeSolver,
  blas: () => 1,
  solver: () => 2,
  makeCurrent: () => undefined,
  driver: {
    api: {
      cuMemcpyDtoH_v2: (dst: Uint8Array, src: number) => {
        new Int32Array(dst.buffer)[0] = at(src)[0]!;
        return 0;
      },
    },
  },
} as unknown as CudaContext;
const scratch = (bytes: number): number => put(new Float64Array(Math.max(1, bytes)));

function rnd(seed: number): () => number {
  let s = seed;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32 - 0.5;
}
const close = (a: Float64Array, b: Float64Array): void => {
  for (let i = 0; i < a.length; i++)
    assert.ok(Math.abs(a[i]! - b[i]!) < 1e-9, `element ${i}: ${a[i]} vs ${b[i]}`);
};

void describe('CUDA tile routines: row-major ops on column-major libraries (mapping only)', () => {
  void it('trsm: B := B·L⁻ᵀ, reading only the lower triangle of a', () => {
    const [m, n] = [5, 4];
    const r = rnd(1);
    const l = Float64Array.from({ length: n * n }, (_, i) =>
      Math.floor(i / n) === i % n ? 2 + r() : Math.floor(i / n) > i % n ? r() : 99,
    );
    const b = Float64Array.from({ length: m * n }, r);
    const want = Float64Array.from(b);
    trsmTs(m, n, l, want);
    const bp = put(Float64Array.from(b));
    runTile(context, { op: 'trsm', dtype: 'f64', m, n, a: put(l), b: bp }, scratch);
    close(at(bp), want);
  });
  void it('syrk: lower C := beta·C + alpha·A·Aᵀ, upper untouched', () => {
    const [n, k] = [4, 3];
    const r = rnd(2);
    const a = Float64Array.from({ length: n * k }, r);
    const c = Float64Array.from({ length: n * n }, r);
    const want = Float64Array.from(c);
    syrkTs(n, k, -1, a, 0.5, want);
    const cp = put(Float64Array.from(c));
    runTile(context, { op: 'syrk', dtype: 'f64', n, k, alpha: -1, beta: 0.5, a: put(a), c: cp }, scratch);
    close(at(cp), want);
  });
  void it('potrf: lower becomes L, upper untouched; a failure names the minor', () => {
    const n = 4;
    const r = rnd(3);
    const a = new Float64Array(n * n);
    for (let i = 0; i < n; i++)
      for (let j = 0; j <= i; j++) a[i * n + j] = a[j * n + i] = i === j ? n + r() : r();
    for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) a[i * n + j] = 42;
    const want = Float64Array.from(a);
    potrfTs(n, want);
    const ap = put(Float64Array.from(a));
    const check = runTile(context, { op: 'potrf', dtype: 'f64', n, a: ap }, scratch);
    assert.equal(check?.(), null);
    close(at(ap), want);
    const bad = Float64Array.from(a);
    bad[2 * n + 2] = -5;
    const fail = runTile(context, { op: 'potrf', dtype: 'f64', n, a: put(bad) }, scratch)?.();
    assert.match(String(fail?.message), /not positive definite at minor 3/);
  });
});
