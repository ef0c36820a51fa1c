/**
 * The system OpenBLAS through koffi: row-major CBLAS GEMM for the CPU kernels (ctx.blas), plus the
 * Cholesky building blocks (POTRF, TRSM, SYRK) as optional extras. koffi passes SharedArrayBuffer-backed
 * typed arrays as raw pointers, so calls run on the tensors in place, with no copies.
 *
 * Loading never throws: it returns the binding or the reason it could not load (the paths it tried and
 * the loader's message), for `tandem devices` to print.
 */
import koffi, { type LibraryHandle } from 'koffi';
import type { CpuBlas, CpuLapack, Gemm, Potrf, Side, Syrk, Trsm, Uplo } from './kernel-api.js';

export type { CpuLapack, Side, Uplo };

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

type F = Float32Array;
type D = Float64Array;

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

/** The C entry points as koffi calls them (enums as ints, arrays as pointers). */
type CblasGemm = (
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
type CblasTrsm = (
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
type CblasSyrk = (
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
type FortranPotrf = (uplo: string, n: Int32Array, a: F | D, lda: Int32Array, info: Int32Array) => void;

const tr = (t: boolean): number => (t ? TRANS : NO_TRANS);
const ul = (u: Uplo): number => (u === 'upper' ? UPPER : LOWER);
const sd = (s: Side): number => (s === 'left' ? LEFT : RIGHT);
const dg = (unit: boolean): number => (unit ? UNIT : NON_UNIT);

/** The row-major wrappers of one precision's routines. */
interface Precision<T extends F | D> {
  readonly gemm: Gemm<T>;
  readonly potrf: Potrf<T>;
  readonly trsm: Trsm<T>;
  readonly syrk: Syrk<T>;
}

/**
 * Binds the four routines of one precision ('s' float, 'd' double): the koffi function objects are
 * made here, once, and each wrapper only maps the enums and calls them (they run per GEMM tile).
 */
function bindPrecision<T extends F | D>(lib: LibraryHandle, p: 's' | 'd'): Precision<T> {
  const t = p === 's' ? 'float' : 'double';
  const gemm = lib.func(
    `void cblas_${p}gemm(int, int, int, int, int, int, ${t}, const ${t} *, int, const ${t} *, int, ${t}, ${t} *, int)`,
  ) as CblasGemm;
  const trsm = lib.func(
    `void cblas_${p}trsm(int, int, int, int, int, int, int, ${t}, const ${t} *, int, ${t} *, int)`,
  ) as CblasTrsm;
  const syrk = lib.func(
    `void cblas_${p}syrk(int, int, int, int, int, ${t}, const ${t} *, int, ${t}, ${t} *, int)`,
  ) as CblasSyrk;
  // The Fortran entry points ship inside libopenblas itself (LAPACKE is a separate Debian package).
  const potrf = lib.func(
    `void ${p}potrf_(const char *, const int *, ${t} *, const int *, int *)`,
  ) as FortranPotrf;
  return {
    gemm: (ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) =>
      gemm(ROW_MAJOR, tr(ta), tr(tb), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc),
    // Row-major A is column-major A^T: the lower triangle of one is the upper triangle of the other.
    potrf: (uplo, n, a, lda) => {
      const info = new Int32Array(1);
      potrf(uplo === 'lower' ? 'U' : 'L', Int32Array.of(n), a, Int32Array.of(lda), info);
      return info[0]!;
    },
    trsm: (side, uplo, ta, unit, m, n, alpha, a, lda, b, ldb) =>
      trsm(ROW_MAJOR, sd(side), ul(uplo), tr(ta), dg(unit), m, n, alpha, a, lda, b, ldb),
    syrk: (uplo, trans, n, k, alpha, a, lda, beta, c, ldc) =>
      syrk(ROW_MAJOR, ul(uplo), tr(trans), n, k, alpha, a, lda, beta, c, ldc),
  };
}

function bind(lib: LibraryHandle, path: string): OpenBlas {
  const s = bindPrecision<F>(lib, 's');
  const d = bindPrecision<D>(lib, 'd');
  const getThreads = lib.func('int openblas_get_num_threads(void)') as () => number;
  const setThreads = lib.func('void openblas_set_num_threads(int)') as (n: number) => void;
  const getConfig = lib.func('const char *openblas_get_config(void)') as () => string;
  return {
    path,
    config: getConfig(),
    getThreads,
    setThreads,
    sgemm: s.gemm,
    dgemm: d.gemm,
    lapack: {
      spotrf: s.potrf,
      dpotrf: d.potrf,
      strsm: s.trsm,
      dtrsm: d.trsm,
      ssyrk: s.syrk,
      dsyrk: d.syrk,
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
