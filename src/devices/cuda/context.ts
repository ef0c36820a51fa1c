/**
 * The per-GPU driver state: the primary context, the three streams (compute, host-to-device,
 * device-to-host) and the cuBLAS handle bound to the compute stream. `reset()` is the fault path:
 * cuDevicePrimaryCtxReset destroys everything in the context, then it is all created again.
 */
import { TandemError } from '../../core/errors.js';
import type { Cublas } from './ffi/cublas.js';
import type { CublasLt } from './ffi/cublaslt.js';
import type { CudaDriver } from './ffi/driver.js';
import type { Cusolver } from './ffi/cusolver.js';

const CU_STREAM_NON_BLOCKING = 1;
/** cuBLAS workspace: 32 MiB, what PyTorch gives cuBLAS on Hopper, so both pick the same kernels. */
export const CUBLAS_WORKSPACE_BYTES = 32 << 20;

/** The context current on the (single, main) JS thread, so makeCurrent is a compare on the hot path. */
let currentContext = 0;

/**
 * Forgets which context is current, so the next makeCurrent sets it again: after a library that sets
 * the current device itself (NCCL calls cudaSetDevice for each rank) the remembered one may be wrong.
 */
export function forgetCurrentContext(): void {
  currentContext = 0;
}

export interface Streams {
  readonly compute: number;
  readonly h2d: number;
  readonly d2h: number;
}

export class CudaContext {
  ctx = 0;
  streams: Streams = { compute: 0, h2d: 0, d2h: 0 };
  cublasHandle = 0;
  workspace = 0;
  /** cuSOLVER (optional library, set by the backend after loading it); its handle is made on first use. */
  cusolver: Cusolver | null = null;
  solverHandle = 0;
  /** True while a stream of this context is being captured into a CUDA graph (nothing may wait on it). */
  capturing = false;
  private retains = 0;

  constructor(
    readonly driver: CudaDriver,
    readonly cublas: Cublas,
    readonly ordinal: number,
    /** Optional: used for GEMM shapes where calibration found it faster. */
    readonly cublasLt: CublasLt | null = null,
  ) {}

  /** Whether `ctx` is a context of our own (the fault fallback) rather than the primary context. */
  private owned = false;

  open(owned = false): void {
    const d = this.driver;
    if (owned) {
      this.ctx = d.out1('cuCtxCreate_v4', (o) => d.api.cuCtxCreate_v4(o, 0, 0, this.ordinal));
    } else {
      this.ctx = d.out1('cuDevicePrimaryCtxRetain', (o) => d.api.cuDevicePrimaryCtxRetain(o, this.ordinal));
      this.retains++;
    }
    this.owned = owned;
    currentContext = 0;
    this.makeCurrent();
    const stream = (what: string): number =>
      d.out1(`cuStreamCreate(${what})`, (o) => d.api.cuStreamCreate(o, CU_STREAM_NON_BLOCKING));
    this.streams = { compute: stream('compute'), h2d: stream('h2d'), d2h: stream('d2h') };
    this.workspace = d.out1('cuMemAlloc_v2(cublas workspace)', (o) =>
      d.api.cuMemAlloc_v2(o, CUBLAS_WORKSPACE_BYTES),
    );
    this.cublasHandle = 0;
    this.blas();
  }

  /** The cuBLAS handle, created on first use (and again after a reset) and bound to the compute stream. */
  blas(): number {
    if (this.cublasHandle !== 0) return this.cublasHandle;
    const h = this.cublas.create();
    this.cublas.setStream(h, this.streams.compute);
    this.cublas.setWorkspace(h, this.workspace, CUBLAS_WORKSPACE_BYTES);
    this.cublasHandle = h;
    return h;
  }

  /** The cuSOLVER handle, created on first use (and again after a reset), bound to the compute stream. */
  solver(): number {
    if (this.solverHandle !== 0) return this.solverHandle;
    if (!this.cusolver)
      throw new TandemError(
        'TANDEM_ERR_KERNEL_FAILED',
        'cuSOLVER (libcusolver) was not found: potrf needs it',
      );
    this.makeCurrent();
    const h = this.cusolver.create();
    this.cusolver.setStream(h, this.streams.compute);
    this.solverHandle = h;
    return h;
  }

  makeCurrent(): void {
    if (currentContext === this.ctx) return;
    this.driver.check(this.driver.api.cuCtxSetCurrent(this.ctx), 'cuCtxSetCurrent');
    currentContext = this.ctx;
  }

  /**
   * After a fault the context is unusable (every call returns the sticky error). Reset the primary
   * context and build the streams and cuBLAS state again; if the driver will not hand the primary
   * context back, fall back to a context of our own. Every allocation, module, event and host
   * registration of the old context is gone either way. Returns how it recovered.
   */
  reset(): string {
    const d = this.driver;
    // Destroying the old handle may fail on a faulted context; the reset below frees it anyway.
    if (this.cublasHandle !== 0) this.cublas.destroy(this.cublasHandle);
    this.cublasHandle = 0;
    if (this.solverHandle !== 0) this.cusolver?.destroy(this.solverHandle);
    this.solverHandle = 0;
    this.cublasLt?.forget();
    d.api.cuCtxSetCurrent(0);
    currentContext = 0;
    if (this.owned) d.api.cuCtxDestroy_v2(this.ctx);
    const attempts: string[] = [];
    const rc = d.api.cuDevicePrimaryCtxReset_v2(this.ordinal);
    if (rc === 0) {
      try {
        this.open();
        return 'primary context reset';
      } catch (e) {
        attempts.push(`primary context reset, then ${e instanceof Error ? e.message : String(e)}`);
      }
    } else attempts.push(`cuDevicePrimaryCtxReset_v2 failed: ${d.describe(rc)}`);
    try {
      this.open(true);
      return 'new context (cuCtxCreate_v4)';
    } catch (e) {
      attempts.push(e instanceof Error ? e.message : String(e));
    }
    throw new TandemError(
      'TANDEM_ERR_DRIVER',
      `could not recover GPU ${this.ordinal}: ${attempts.join('; ')}`,
      { attempts },
    );
  }

  close(): void {
    const d = this.driver;
    this.makeCurrent();
    d.api.cuCtxSynchronize();
    if (this.cublasHandle !== 0) this.cublas.destroy(this.cublasHandle);
    if (this.solverHandle !== 0) this.cusolver?.destroy(this.solverHandle);
    this.solverHandle = 0;
    for (const s of [this.streams.compute, this.streams.h2d, this.streams.d2h]) d.api.cuStreamDestroy_v2(s);
    d.api.cuMemFree_v2(this.workspace);
    if (this.owned) d.api.cuCtxDestroy_v2(this.ctx);
    for (; this.retains > 0; this.retains--) d.api.cuDevicePrimaryCtxRelease_v2(this.ordinal);
    currentContext = 0;
  }
}
