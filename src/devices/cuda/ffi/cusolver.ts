/**
 * Typed koffi bindings of cuSOLVER dense (cusolverDn): only Cholesky (s/d potrf with its workspace
 * query). Loaded like cuBLAS (toolkit directories, then the system loader); optional: without it the
 * backend says so when it opens (`libcusolver: not loaded`) and each CUDA device lists potrf in its
 * `unavailableOps`, so the scheduler places potrf on another device (or refuses it when none has one);
 * a potrf that reaches the GPU anyway fails with TANDEM_ERR_KERNEL_FAILED naming the library.
 */
import { TandemError } from '../../../core/errors.js';
import type { KoffiLib } from './loader.js';
import type { Out } from './driver.js';

/** cublasFillMode_t (cuSOLVER takes cuBLAS's enum). */
export const FILL = { lower: 0, upper: 1 } as const;

/** The sonames tried, newest first (CUDA 13 ships libcusolver.so.12, CUDA 12 .so.11). */
export const CUSOLVER_SONAMES = ['libcusolver.so.12', 'libcusolver.so.11', 'libcusolver.so'] as const;

interface CusolverApi {
  cusolverDnCreate(handle: Out<number>): number;
  cusolverDnDestroy(handle: number): number;
  cusolverDnSetStream(handle: number, stream: number): number;
  cusolverDnSpotrf_bufferSize(
    h: number,
    uplo: number,
    n: number,
    a: number,
    lda: number,
    lwork: Out<number>,
  ): number;
  cusolverDnDpotrf_bufferSize(
    h: number,
    uplo: number,
    n: number,
    a: number,
    lda: number,
    lwork: Out<number>,
  ): number;
  cusolverDnSpotrf(
    h: number,
    uplo: number,
    n: number,
    a: number,
    lda: number,
    w: number,
    lwork: number,
    info: number,
  ): number;
  cusolverDnDpotrf(
    h: number,
    uplo: number,
    n: number,
    a: number,
    lda: number,
    w: number,
    lwork: number,
    info: number,
  ): number;
}

const DECLS: Record<keyof CusolverApi, string> = {
  cusolverDnCreate: 'int cusolverDnCreate(_Out_ uint64_t *handle)',
  cusolverDnDestroy: 'int cusolverDnDestroy(uint64_t handle)',
  cusolverDnSetStream: 'int cusolverDnSetStream(uint64_t handle, uint64_t stream)',
  cusolverDnSpotrf_bufferSize:
    'int cusolverDnSpotrf_bufferSize(uint64_t h, int uplo, int n, uint64_t a, int lda, _Out_ int *lwork)',
  cusolverDnDpotrf_bufferSize:
    'int cusolverDnDpotrf_bufferSize(uint64_t h, int uplo, int n, uint64_t a, int lda, _Out_ int *lwork)',
  cusolverDnSpotrf:
    'int cusolverDnSpotrf(uint64_t h, int uplo, int n, uint64_t a, int lda, uint64_t work, int lwork, uint64_t info)',
  cusolverDnDpotrf:
    'int cusolverDnDpotrf(uint64_t h, int uplo, int n, uint64_t a, int lda, uint64_t work, int lwork, uint64_t info)',
};

/** cusolverStatus_t names (cuSOLVER has no status-string function). */
const STATUS: Readonly<Record<number, string>> = {
  1: 'CUSOLVER_STATUS_NOT_INITIALIZED',
  2: 'CUSOLVER_STATUS_ALLOC_FAILED',
  3: 'CUSOLVER_STATUS_INVALID_VALUE',
  4: 'CUSOLVER_STATUS_ARCH_MISMATCH',
  6: 'CUSOLVER_STATUS_EXECUTION_FAILED',
  7: 'CUSOLVER_STATUS_INTERNAL_ERROR',
  8: 'CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED',
};

export class Cusolver {
  private readonly api: CusolverApi;

  constructor(
    lib: KoffiLib,
    readonly path: string,
  ) {
    const api = {} as Record<string, unknown>;
    for (const [name, decl] of Object.entries(DECLS)) api[name] = lib.func(decl);
    this.api = api as unknown as CusolverApi;
  }

  check(rc: number, call: string): void {
    if (rc !== 0) {
      throw new TandemError(
        'TANDEM_ERR_DRIVER',
        `${call} failed: ${STATUS[rc] ?? 'unknown status'} (cusolverStatus ${rc})`,
        { call, cusolverStatus: rc },
      );
    }
  }

  create(): number {
    const h: Out<number> = [0];
    this.check(this.api.cusolverDnCreate(h), 'cusolverDnCreate');
    return Number(h[0]);
  }

  destroy(handle: number): void {
    this.api.cusolverDnDestroy(handle);
  }

  setStream(handle: number, stream: number): void {
    this.check(this.api.cusolverDnSetStream(handle, stream), 'cusolverDnSetStream');
  }

  /** Workspace size in elements of the dtype for an n x n potrf (column-major, lda = n). */
  potrfBufferSize(handle: number, f64: boolean, uplo: number, n: number, a: number): number {
    const lw: Out<number> = [0];
    const rc = f64
      ? this.api.cusolverDnDpotrf_bufferSize(handle, uplo, n, a, n, lw)
      : this.api.cusolverDnSpotrf_bufferSize(handle, uplo, n, a, n, lw);
    this.check(rc, f64 ? 'cusolverDnDpotrf_bufferSize' : 'cusolverDnSpotrf_bufferSize');
    return Number(lw[0]);
  }

  /** Enqueues the factorization; `info` (device int) is 0, or k when the leading minor k is not positive. */
  potrf(
    handle: number,
    f64: boolean,
    uplo: number,
    n: number,
    a: number,
    work: number,
    lwork: number,
    info: number,
  ): void {
    const rc = f64
      ? this.api.cusolverDnDpotrf(handle, uplo, n, a, n, work, lwork, info)
      : this.api.cusolverDnSpotrf(handle, uplo, n, a, n, work, lwork, info);
    if (rc !== 0) this.check(rc, f64 ? 'cusolverDnDpotrf' : 'cusolverDnSpotrf');
  }
}
