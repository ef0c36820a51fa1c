/**
 * The per-GPU driver state: the primary context, the three streams (compute, host-to-device,
 * device-to-host) and the cuBLAS handle bound to the compute stream. `reset()` is the fault path:
 * cuDevicePrimaryCtxReset destroys everything in the context, then it is all created again.
 */
import type { Cublas } from './ffi/cublas.js';
import type { CudaDriver } from './ffi/driver.js';

const CU_STREAM_NON_BLOCKING = 1;
/** cuBLAS workspace: 32 MiB, what PyTorch gives cuBLAS on Hopper, so both pick the same kernels. */
export const CUBLAS_WORKSPACE_BYTES = 32 << 20;

/** The context current on the (single, main) JS thread, so makeCurrent is a compare on the hot path. */
let currentContext = 0;

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
  private retains = 0;

  constructor(
    readonly driver: CudaDriver,
    readonly cublas: Cublas,
    readonly ordinal: number,
  ) {}

  open(): void {
    const d = this.driver;
    this.ctx = d.out1('cuDevicePrimaryCtxRetain', (o) => d.api.cuDevicePrimaryCtxRetain(o, this.ordinal));
    this.retains++;
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

  makeCurrent(): void {
    if (currentContext === this.ctx) return;
    this.driver.check(this.driver.api.cuCtxSetCurrent(this.ctx), 'cuCtxSetCurrent');
    currentContext = this.ctx;
  }

  /**
   * After a fault the context is unusable (every call returns the sticky error). Reset it and build
   * the streams and cuBLAS state again; every allocation, module, event and registration is gone.
   */
  reset(): void {
    const d = this.driver;
    // Destroying the old handle may fail on a faulted context; the reset below frees it anyway.
    if (this.cublasHandle !== 0) this.cublas.destroy(this.cublasHandle);
    this.cublasHandle = 0;
    d.check(d.api.cuDevicePrimaryCtxReset_v2(this.ordinal), 'cuDevicePrimaryCtxReset_v2');
    // Retaining again re-activates the context; close() releases every retain taken (errors ignored).
    this.open();
  }

  close(): void {
    const d = this.driver;
    this.makeCurrent();
    d.api.cuCtxSynchronize();
    if (this.cublasHandle !== 0) this.cublas.destroy(this.cublasHandle);
    for (const s of [this.streams.compute, this.streams.h2d, this.streams.d2h]) d.api.cuStreamDestroy_v2(s);
    d.api.cuMemFree_v2(this.workspace);
    for (; this.retains > 0; this.retains--) d.api.cuDevicePrimaryCtxRelease_v2(this.ordinal);
    currentContext = 0;
  }
}
