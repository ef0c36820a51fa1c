/**
 * What a CPU kernel sees inside a worker thread. Tensors arrive as typed views over the shared host
 * buffers (f16/bf16 as raw Uint16 words); BLAS is present when the system OpenBLAS loaded.
 */
import type { HostArray } from '../../core/dtype.js';
import type { Scalars, TensorDesc } from '../device.js';

export interface CpuArg {
  readonly data: HostArray;
  readonly desc: TensorDesc;
}

export type Transpose = boolean;

/** Row-major BLAS/LAPACK entry points (bound to OpenBLAS through koffi inside the worker). */
/** C = alpha * op(A) op(B) + beta * C, row-major, in one element type. */
export type Gemm<T extends Float32Array | Float64Array> = (
  ta: Transpose,
  tb: Transpose,
  m: number,
  n: number,
  k: number,
  alpha: number,
  a: T,
  lda: number,
  b: T,
  ldb: number,
  beta: number,
  c: T,
  ldc: number,
) => void;

export interface CpuBlas {
  readonly sgemm: Gemm<Float32Array>;
  readonly dgemm: Gemm<Float64Array>;
}

export type Uplo = 'upper' | 'lower';
export type Side = 'left' | 'right';
type F = Float32Array;
type D = Float64Array;

/** potrf: LAPACK's info: 0 = done, i > 0 = leading minor i is not positive definite. */
export type Potrf<T extends F | D> = (uplo: Uplo, n: number, a: T, lda: number) => number;
/** B = alpha * op(A)^-1 B (side 'left') or alpha * B op(A)^-1 (side 'right'), A triangular. */
export type Trsm<T extends F | D> = (
  side: Side,
  uplo: Uplo,
  transA: boolean,
  unitDiag: boolean,
  m: number,
  n: number,
  alpha: number,
  a: T,
  lda: number,
  b: T,
  ldb: number,
) => void;
/** C = alpha * A A^T + beta * C (trans: A^T A), only the `uplo` triangle of C is touched. */
export type Syrk<T extends F | D> = (
  uplo: Uplo,
  trans: boolean,
  n: number,
  k: number,
  alpha: number,
  a: T,
  lda: number,
  beta: number,
  c: T,
  ldc: number,
) => void;

/** Cholesky pieces, row-major, in float (s) and double (d). */
export interface CpuLapack {
  readonly spotrf: Potrf<F>;
  readonly dpotrf: Potrf<D>;
  readonly strsm: Trsm<F>;
  readonly dtrsm: Trsm<D>;
  readonly ssyrk: Syrk<F>;
  readonly dsyrk: Syrk<D>;
}

export interface CpuKernelContext {
  readonly blas: CpuBlas | null;
  /** 'openblas' | 'wasm' | 'ts': which GEMM engine this worker uses (tests pin it). */
  readonly gemmEngine: 'openblas' | 'wasm' | 'ts';
  readonly workerIndex: number;
  /** Cholesky tile routines (potrf, trsm, syrk) from the same OpenBLAS; absent or null without it. */
  readonly lapack?: CpuLapack | null;
}

export type CpuKernel = (args: readonly CpuArg[], scalars: Scalars, ctx: CpuKernelContext) => void;
