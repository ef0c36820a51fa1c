/**
 * Typed koffi bindings of cuBLAS (v2 API). GEMM goes through cublasGemmEx for every dtype so one call
 * covers f32, tf32 (compute type 32F_FAST_TF32), f16 and bf16 with fp32 accumulation, and f64.
 */
import { TandemError } from '../../../core/errors.js';
import type { KoffiLib } from './loader.js';
import type { Out } from './driver.js';

export const CUDA_R = { f32: 0, f64: 1, f16: 2, bf16: 14 } as const;
export const CUBLAS_COMPUTE = { f32: 68, tf32: 77, f64: 70 } as const;
export const CUBLAS_OP = { N: 0, T: 1 } as const;
const CUBLAS_GEMM_DEFAULT = -1;

interface CublasApi {
  cublasCreate_v2(handle: Out<number>): number;
  cublasDestroy_v2(handle: number): number;
  cublasSetStream_v2(handle: number, stream: number): number;
  cublasSetWorkspace_v2(handle: number, ptr: number, bytes: number): number;
  cublasGetVersion_v2(handle: number, v: Out<number>): number;
  cublasGemmEx(
    handle: number,
    transa: number,
    transb: number,
    m: number,
    n: number,
    k: number,
    alpha: Float32Array | Float64Array,
    a: number,
    atype: number,
    lda: number,
    b: number,
    btype: number,
    ldb: number,
    beta: Float32Array | Float64Array,
    c: number,
    ctype: number,
    ldc: number,
    compute: number,
    algo: number,
  ): number;
  cublasGetStatusString(rc: number): string;
  cublasStrsm_v2(
    h: number,
    side: number,
    uplo: number,
    trans: number,
    diag: number,
    m: number,
    n: number,
    alpha: Float32Array,
    a: number,
    lda: number,
    b: number,
    ldb: number,
  ): number;
  cublasDtrsm_v2(
    h: number,
    side: number,
    uplo: number,
    trans: number,
    diag: number,
    m: number,
    n: number,
    alpha: Float64Array,
    a: number,
    lda: number,
    b: number,
    ldb: number,
  ): number;
  cublasSsyrk_v2(
    h: number,
    uplo: number,
    trans: number,
    n: number,
    k: number,
    alpha: Float32Array,
    a: number,
    lda: number,
    beta: Float32Array,
    c: number,
    ldc: number,
  ): number;
  cublasDsyrk_v2(
    h: number,
    uplo: number,
    trans: number,
    n: number,
    k: number,
    alpha: Float64Array,
    a: number,
    lda: number,
    beta: Float64Array,
    c: number,
    ldc: number,
  ): number;
}

const DECLS: Record<keyof CublasApi, string> = {
  cublasCreate_v2: 'int cublasCreate_v2(_Out_ uint64_t *handle)',
  cublasDestroy_v2: 'int cublasDestroy_v2(uint64_t handle)',
  cublasSetStream_v2: 'int cublasSetStream_v2(uint64_t handle, uint64_t stream)',
  cublasSetWorkspace_v2: 'int cublasSetWorkspace_v2(uint64_t handle, uint64_t ptr, size_t bytes)',
  cublasGetVersion_v2: 'int cublasGetVersion_v2(uint64_t handle, _Out_ int *v)',
  cublasGemmEx:
    'int cublasGemmEx(uint64_t h, int ta, int tb, int m, int n, int k, const void *alpha, uint64_t a, int atype, int lda, uint64_t b, int btype, int ldb, const void *beta, uint64_t c, int ctype, int ldc, int compute, int algo)',
  cublasGetStatusString: 'const char *cublasGetStatusString(int rc)',
  cublasStrsm_v2:
    'int cublasStrsm_v2(uint64_t h, int side, int uplo, int trans, int diag, int m, int n, const void *alpha, uint64_t a, int lda, uint64_t b, int ldb)',
  cublasDtrsm_v2:
    'int cublasDtrsm_v2(uint64_t h, int side, int uplo, int trans, int diag, int m, int n, const void *alpha, uint64_t a, int lda, uint64_t b, int ldb)',
  cublasSsyrk_v2:
    'int cublasSsyrk_v2(uint64_t h, int uplo, int trans, int n, int k, const void *alpha, uint64_t a, int lda, const void *beta, uint64_t c, int ldc)',
  cublasDsyrk_v2:
    'int cublasDsyrk_v2(uint64_t h, int uplo, int trans, int n, int k, const void *alpha, uint64_t a, int lda, const void *beta, uint64_t c, int ldc)',
};

/** cublasSideMode_t, cublasFillMode_t, cublasDiagType_t. */
export const CUBLAS_SIDE = { left: 0, right: 1 } as const;
export const CUBLAS_FILL = { lower: 0, upper: 1 } as const;
export const CUBLAS_DIAG = { nonUnit: 0, unit: 1 } as const;

export class Cublas {
  private readonly api: CublasApi;

  constructor(
    lib: KoffiLib,
    readonly path: string,
  ) {
    const api = {} as Record<string, unknown>;
    for (const [name, decl] of Object.entries(DECLS)) api[name] = lib.func(decl);
    this.api = api as unknown as CublasApi;
  }

  check(rc: number, call: string): void {
    if (rc !== 0) {
      throw new TandemError(
        'TANDEM_ERR_DRIVER',
        `${call} failed: ${this.api.cublasGetStatusString(rc)} (cublasStatus ${rc})`,
        {
          call,
          cublasStatus: rc,
        },
      );
    }
  }

  create(): number {
    const h: Out<number> = [0];
    this.check(this.api.cublasCreate_v2(h), 'cublasCreate_v2');
    return Number(h[0]);
  }

  destroy(handle: number): void {
    this.api.cublasDestroy_v2(handle);
  }

  setStream(handle: number, stream: number): void {
    this.check(this.api.cublasSetStream_v2(handle, stream), 'cublasSetStream_v2');
  }

  setWorkspace(handle: number, ptr: number, bytes: number): void {
    this.check(this.api.cublasSetWorkspace_v2(handle, ptr, bytes), 'cublasSetWorkspace_v2');
  }

  version(handle: number): number {
    const v: Out<number> = [0];
    this.check(this.api.cublasGetVersion_v2(handle, v), 'cublasGetVersion_v2');
    return v[0];
  }

  /** Column-major GEMM: C = alpha op(A) op(B) + beta C (the caller swaps operands for row-major). */
  gemmEx(
    handle: number,
    ta: number,
    tb: number,
    m: number,
    n: number,
    k: number,
    alpha: Float32Array | Float64Array,
    a: number,
    lda: number,
    b: number,
    ldb: number,
    beta: Float32Array | Float64Array,
    c: number,
    ldc: number,
    dataType: number,
    compute: number,
  ): void {
    const rc = this.api.cublasGemmEx(
      handle,
      ta,
      tb,
      m,
      n,
      k,
      alpha,
      a,
      dataType,
      lda,
      b,
      dataType,
      ldb,
      beta,
      c,
      dataType,
      ldc,
      compute,
      CUBLAS_GEMM_DEFAULT,
    );
    if (rc !== 0) this.check(rc, 'cublasGemmEx');
  }

  /** Column-major triangular solve op(A) X = alpha B (left) or X op(A) = alpha B (right), X over B. */
  trsm(
    handle: number,
    f64: boolean,
    side: number,
    uplo: number,
    trans: number,
    diag: number,
    m: number,
    n: number,
    alpha: Float32Array | Float64Array,
    a: number,
    lda: number,
    b: number,
    ldb: number,
  ): void {
    const rc = f64
      ? this.api.cublasDtrsm_v2(handle, side, uplo, trans, diag, m, n, alpha as Float64Array, a, lda, b, ldb)
      : this.api.cublasStrsm_v2(handle, side, uplo, trans, diag, m, n, alpha as Float32Array, a, lda, b, ldb);
    if (rc !== 0) this.check(rc, f64 ? 'cublasDtrsm_v2' : 'cublasStrsm_v2');
  }

  /** Column-major C := alpha op(A) op(A)^T + beta C on the `uplo` triangle of C (n x n). */
  syrk(
    handle: number,
    f64: boolean,
    uplo: number,
    trans: number,
    n: number,
    k: number,
    alpha: Float32Array | Float64Array,
    a: number,
    lda: number,
    beta: Float32Array | Float64Array,
    c: number,
    ldc: number,
  ): void {
    const rc = f64
      ? this.api.cublasDsyrk_v2(
          handle,
          uplo,
          trans,
          n,
          k,
          alpha as Float64Array,
          a,
          lda,
          beta as Float64Array,
          c,
          ldc,
        )
      : this.api.cublasSsyrk_v2(
          handle,
          uplo,
          trans,
          n,
          k,
          alpha as Float32Array,
          a,
          lda,
          beta as Float32Array,
          c,
          ldc,
        );
    if (rc !== 0) this.check(rc, f64 ? 'cublasDsyrk_v2' : 'cublasSsyrk_v2');
  }
}
