/**
 * The system OpenBLAS through koffi: row-major CBLAS GEMM for the CPU kernels (ctx.blas), plus the
 * Cholesky building blocks (POTRF, TRSM, SYRK) as optional extras. koffi passes SharedArrayBuffer-backed
 * typed arrays as raw pointers, so calls run on the tensors in place, with no copies.
 *
 * Loading never throws: it returns the binding or the reason it could not load (the paths it tried and
 * the loader's message), for `tandem devices` to print.
 */
import koffi, { type LibraryHandle } from 'koffi';
import type { CpuBlas } from './kernel-api.js';

/** CBLAS enum values (cblas.h). */
const ROW_MAJOR = 101;
const NO_TRANS = 111;
const TRANS = 112;
const UPPER = 121;
const LOWER = 122;
const NON_UNIT = 131;
const UNIT = 132;
const LEFT = 141;
const RIGHT = 142;

export const DEFAULT_OPENBLAS_PATHS: readonly string[] = [
  'libopenblas.so.0',
  'libopenblas.so',
  '/usr/lib/x86_64-linux-gnu/libopenblas.so.0',
  '/usr/lib/aarch64-linux-gnu/libopenblas.so.0',
  'libopenblas.dylib',
  '/opt/homebrew/opt/openblas/lib/libopenblas.dylib',
];

export type Uplo = 'upper' | 'lower';
export type Side = 'left' | 'right';
type F = Float32Array;
type D = Float64Array;

/** Cholesky pieces, row-major. potrf returns LAPACK's info: 0 = done, i > 0 = leading minor i is not positive definite. */
export interface CpuLapack {
  spotrf(uplo: Uplo, n: number, a: F, lda: number): number;
  dpotrf(uplo: Uplo, n: number, a: D, lda: number): number;
  /** B = alpha * op(A)^-1 B (side 'left') or alpha * B op(A)^-1 (side 'right'), A triangular. */
  strsm(
    side: Side,
    uplo: Uplo,
    transA: boolean,
    unitDiag: boolean,
    m: number,
    n: number,
    alpha: number,
    a: F,
    lda: number,
    b: F,
    ldb: number,
  ): void;
  dtrsm(
    side: Side,
    uplo: Uplo,
    transA: boolean,
    unitDiag: boolean,
    m: number,
    n: number,
    alpha: number,
    a: D,
    lda: number,
    b: D,
    ldb: number,
  ): void;
  /** C = alpha * A A^T + beta * C (trans: A^T A), only the `uplo` triangle of C is touched. */
  ssyrk(
    uplo: Uplo,
    trans: boolean,
    n: number,
    k: number,
    alpha: number,
    a: F,
    lda: number,
    beta: number,
    c: F,
    ldc: number,
  ): void;
  dsyrk(
    uplo: Uplo,
    trans: boolean,
    n: number,
    k: number,
    alpha: number,
    a: D,
    lda: number,
    beta: number,
    c: D,
    ldc: number,
  ): void;
}

export interface OpenBlas extends CpuBlas {
  readonly lapack: CpuLapack;
  /** The library path that loaded, and OpenBLAS's build string (core type, threading). */
  readonly path: string;
  readonly config: string;
  /** OpenBLAS's own thread count: set it to 1 when several pool workers each call BLAS. */
  getThreads(): number;
  setThreads(n: number): void;
}

export type OpenBlasLoad =
  { readonly blas: OpenBlas; readonly reason?: undefined } | { readonly blas: null; readonly reason: string };

type GemmFn = (
  order: number,
  ta: number,
  tb: number,
  m: number,
  n: number,
  k: number,
  alpha: number,
  a: F | D,
  lda: number,
  b: F | D,
  ldb: number,
  beta: number,
  c: F | D,
  ldc: number,
) => void;
type TrsmFn = (
  order: number,
  side: number,
  uplo: number,
  ta: number,
  diag: number,
  m: number,
  n: number,
  alpha: number,
  a: F | D,
  lda: number,
  b: F | D,
  ldb: number,
) => void;
type SyrkFn = (
  order: number,
  uplo: number,
  trans: number,
  n: number,
  k: number,
  alpha: number,
  a: F | D,
  lda: number,
  beta: number,
  c: F | D,
  ldc: number,
) => void;
/** Fortran LAPACK: every argument by pointer. */
type PotrfFn = (uplo: string, n: Int32Array, a: F | D, lda: Int32Array, info: Int32Array) => void;

function bind(lib: LibraryHandle, path: string): OpenBlas {
  const sgemm = lib.func(
    'void cblas_sgemm(int, int, int, int, int, int, float, const float *, int, const float *, int, float, float *, int)',
  ) as GemmFn;
  const dgemm = lib.func(
    'void cblas_dgemm(int, int, int, int, int, int, double, const double *, int, const double *, int, double, double *, int)',
  ) as GemmFn;
  const strsm = lib.func(
    'void cblas_strsm(int, int, int, int, int, int, int, float, const float *, int, float *, int)',
  ) as TrsmFn;
  const dtrsm = lib.func(
    'void cblas_dtrsm(int, int, int, int, int, int, int, double, const double *, int, double *, int)',
  ) as TrsmFn;
  const ssyrk = lib.func(
    'void cblas_ssyrk(int, int, int, int, int, float, const float *, int, float, float *, int)',
  ) as SyrkFn;
  const dsyrk = lib.func(
    'void cblas_dsyrk(int, int, int, int, int, double, const double *, int, double, double *, int)',
  ) as SyrkFn;
  // The Fortran entry points ship inside libopenblas itself (LAPACKE is a separate Debian package).
  const spotrf = lib.func('void spotrf_(const char *, const int *, float *, const int *, int *)') as PotrfFn;
  const dpotrf = lib.func('void dpotrf_(const char *, const int *, double *, const int *, int *)') as PotrfFn;
  const getThreads = lib.func('int openblas_get_num_threads(void)') as () => number;
  const setThreads = lib.func('void openblas_set_num_threads(int)') as (n: number) => void;
  const getConfig = lib.func('const char *openblas_get_config(void)') as () => string;

  const tr = (t: boolean): number => (t ? TRANS : NO_TRANS);
  const ul = (u: Uplo): number => (u === 'upper' ? UPPER : LOWER);
  const sd = (s: Side): number => (s === 'left' ? LEFT : RIGHT);
  const dg = (unit: boolean): number => (unit ? UNIT : NON_UNIT);
  // Row-major A is column-major A^T: the lower triangle of one is the upper triangle of the other.
  const potrf = (fn: PotrfFn, uplo: Uplo, n: number, a: F | D, lda: number): number => {
    const info = new Int32Array(1);
    fn(uplo === 'lower' ? 'U' : 'L', Int32Array.of(n), a, Int32Array.of(lda), info);
    return info[0]!;
  };

  return {
    path,
    config: getConfig(),
    getThreads,
    setThreads,
    sgemm: (ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) =>
      sgemm(ROW_MAJOR, tr(ta), tr(tb), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc),
    dgemm: (ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) =>
      dgemm(ROW_MAJOR, tr(ta), tr(tb), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc),
    lapack: {
      spotrf: (uplo, n, a, lda) => potrf(spotrf, uplo, n, a, lda),
      dpotrf: (uplo, n, a, lda) => potrf(dpotrf, uplo, n, a, lda),
      strsm: (side, uplo, ta, unit, m, n, alpha, a, lda, b, ldb) =>
        strsm(ROW_MAJOR, sd(side), ul(uplo), tr(ta), dg(unit), m, n, alpha, a, lda, b, ldb),
      dtrsm: (side, uplo, ta, unit, m, n, alpha, a, lda, b, ldb) =>
        dtrsm(ROW_MAJOR, sd(side), ul(uplo), tr(ta), dg(unit), m, n, alpha, a, lda, b, ldb),
      ssyrk: (uplo, trans, n, k, alpha, a, lda, beta, c, ldc) =>
        ssyrk(ROW_MAJOR, ul(uplo), tr(trans), n, k, alpha, a, lda, beta, c, ldc),
      dsyrk: (uplo, trans, n, k, alpha, a, lda, beta, c, ldc) =>
        dsyrk(ROW_MAJOR, ul(uplo), tr(trans), n, k, alpha, a, lda, beta, c, ldc),
    },
  };
}

/**
 * Loads the first OpenBLAS found among `paths`. Returns the reason when none loads or a symbol is
 * missing (for example a reference BLAS posing under the OpenBLAS name).
 */
export function loadOpenBlas(paths: readonly string[] = DEFAULT_OPENBLAS_PATHS): OpenBlasLoad {
  const failures: string[] = [];
  for (const path of paths) {
    let lib: LibraryHandle;
    try {
      lib = koffi.load(path);
    } catch (e) {
      failures.push(`${path}: ${e instanceof Error ? e.message : String(e)}`);
      continue;
    }
    try {
      return { blas: bind(lib, path) };
    } catch (e) {
      failures.push(`${path} loaded but lacks a symbol: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  return {
    blas: null,
    reason: `OpenBLAS not found (install libopenblas0-pthread); tried ${failures.join('; ')}`,
  };
}
