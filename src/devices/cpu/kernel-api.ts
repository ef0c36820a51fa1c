/**
 * What a CPU kernel sees inside a worker thread. Tensors arrive as typed views over the shared host
 * buffers (f16/bf16 as raw Uint16 words); BLAS is present when the system OpenBLAS loaded.
 */
import type { HostArray } from '../../core/dtype.js';
import type { Scalars, TensorDesc } from '../device.js';
import type { CpuLapack } from './openblas.js';

export type { CpuLapack };

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

export interface CpuKernelContext {
  readonly blas: CpuBlas | null;
  /** 'openblas' | 'wasm' | 'ts': which GEMM engine this worker uses (tests pin it). */
  readonly gemmEngine: 'openblas' | 'wasm' | 'ts';
  readonly workerIndex: number;
  /** Cholesky tile routines (potrf, trsm, syrk) from the same OpenBLAS; absent or null without it. */
  readonly lapack?: CpuLapack | null;
}

export type CpuKernel = (args: readonly CpuArg[], scalars: Scalars, ctx: CpuKernelContext) => void;
