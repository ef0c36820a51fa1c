/**
 * The Cholesky tile routines on cuBLAS/cuSOLVER. The ops are defined on row-major tiles (lower
 * triangle); cuBLAS and cuSOLVER are column-major, and a row-major matrix read column-major is its
 * transpose. So, with Xc the column-major view of row-major X (Xc = Xᵀ):
 *  - potrf: lower L of row-major A = upper triangle of Ac; Ac = A (symmetric) = Uᵀ·U with U = Lᵀ,
 *    so cuSOLVER potrf with uplo = UPPER writes exactly L's entries.
 *  - trsm: B := B·L⁻ᵀ  ⇔  Bc := (B·L⁻ᵀ)ᵀ = L⁻¹·Bc, and L = Lcᵀ with Lc upper: left side, uplo UPPER,
 *    op T, on the n x m column-major Bc (ldb = n).
 *  - syrk: lower C := βC + α·A·Aᵀ  ⇔  upper Cc := βCc + α·Acᵀ·Ac, Ac k x n (lda = k): uplo UPPER, op T.
 */
import { TandemError } from '../../core/errors.js';
import type { CudaContext } from './context.js';
import { CUBLAS_DIAG, CUBLAS_FILL, CUBLAS_OP, CUBLAS_SIDE } from './ffi/cublas.js';
import { FILL } from './ffi/cusolver.js';
import type { CudaTileRequest } from './kernel-api.js';

/** Called after the stream finished the launch: an error when the routine failed on the device. */
export type TileCheck = () => Error | null;

const alpha32 = new Float32Array(1);
const beta32 = new Float32Array(1);
const alpha64 = new Float64Array(1);
const beta64 = new Float64Array(1);
/** Workspace sizes per (dtype, n): the query is a host call, the answer never changes. */
const lworkCache = new Map<string, number>();

export function runTile(
  context: CudaContext,
  req: CudaTileRequest,
  scratch: (bytes: number) => number,
): TileCheck | null {
  const f64 = req.dtype === 'f64';
  const es = f64 ? 8 : 4;
  switch (req.op) {
    case 'trsm': {
      if (req.m === 0 || req.n === 0) return null;
      const alpha = f64 ? alpha64 : alpha32;
      alpha[0] = 1;
      context.cublas.trsm(
        context.blas(),
        f64,
        CUBLAS_SIDE.left,
        CUBLAS_FILL.upper,
        CUBLAS_OP.T,
        CUBLAS_DIAG.nonUnit,
        req.n,
        req.m,
        alpha,
        req.a,
        req.n,
        req.b,
        req.n,
      );
      return null;
    }
    case 'syrk': {
      if (req.n === 0) return null;
      const alpha = f64 ? alpha64 : alpha32;
      const beta = f64 ? beta64 : beta32;
      alpha[0] = req.alpha;
      beta[0] = req.beta;
      context.cublas.syrk(
        context.blas(),
        f64,
        CUBLAS_FILL.upper,
        CUBLAS_OP.T,
        req.n,
        req.k,
        alpha,
        req.a,
        Math.max(req.k, 1),
        beta,
        req.c,
        req.n,
      );
      return null;
    }
    case 'potrf': {
      const n = req.n;
      if (n === 0) return null;
      const solver = context.cusolver;
      if (!solver)
        throw new TandemError(
          'TANDEM_ERR_KERNEL_FAILED',
          'potrf on CUDA needs cuSOLVER (libcusolver), which was not found',
        );
      const h = context.solver();
      const key = `${req.dtype}:${n}`;
      let lwork = lworkCache.get(key);
      if (lwork === undefined) {
        lwork = solver.potrfBufferSize(h, f64, FILL.upper, n, req.a);
        lworkCache.set(key, lwork);
      }
      // The device int cuSOLVER writes the result to, and its workspace: scratch of this launch.
      const info = scratch(8);
      const work = lwork > 0 ? scratch(lwork * es) : 0;
      solver.potrf(h, f64, FILL.upper, n, req.a, work, lwork, info);
      return () => {
        // The stream has finished: a 4-byte synchronous read costs microseconds and never waits on work.
        const out = new Uint8Array(4);
        context.makeCurrent();
        const rc = context.driver.api.cuMemcpyDtoH_v2(out, info, 4);
        if (rc !== 0) return context.driver.error(rc, 'cuMemcpyDtoH_v2(potrf info)');
        const k = new Int32Array(out.buffer)[0]!;
        if (k === 0) return null;
        return new TandemError(
          'TANDEM_ERR_KERNEL_FAILED',
          k > 0
            ? `potrf: matrix not positive definite at minor ${k} (of ${n})`
            : `potrf: cuSOLVER rejected parameter ${-k}`,
          { info: k },
        );
      };
    }
  }
}
