/**
 * linear_dw on CUDA: dw = dyᵀ·x with the bias gradient fused (cuBLASLt's BGRADB) when overwriting and
 * cuBLASLt takes it; otherwise (accumulate, f64, declined shapes) a gemm with beta = 0 or 1 and a
 * two-pass column sum, which adds to db when accumulating.
 */
import type { CudaArg, CudaKernelContext, CudaNative } from '../../devices/cuda/kernel-api.js';
import {
  columnChunks,
  columnFinalProgram,
  columnPartialProgram,
  columnPartialVecProgram,
  vectorColumnSum,
} from '../linear/cuda-programs.js';
import { accumulateOf } from './def.js';

/**
 * dW and db as a GEMM and a column sum (PyTorch's `dy.t() @ x` and `dy.sum(0)`), not one cuBLASLt matmul
 * with the BGRADB epilogue: at GPT-2's shapes on an H100 the pair was faster (qkv 0.467 vs 0.501 ms, fc
 * 0.562 vs 0.588, proj 0.444 vs 0.453; bench/RESULTS.md, the twenty-second session). TANDEM_LINEAR_DW_FUSED=1
 * takes the epilogue again (the A/B knob).
 */
const FUSED = process.env['TANDEM_LINEAR_DW_FUSED'] === '1';
/** TANDEM_COLUMN_SUM=scalar: the one-value-a-thread column sum for every dtype (A/B runs). */
const VECTOR_SUM = process.env['TANDEM_COLUMN_SUM'] !== 'scalar';

export const linearDwCuda: CudaNative = {
  kind: 'native',
  run(ctx, args, scalars) {
    const accumulate = accumulateOf('linear_dw', scalars);
    const [dy, x, dw, db] = args as [CudaArg, CudaArg, CudaArg, CudaArg];
    const [m, n] = dy.desc.shape as [number, number];
    const k = x.desc.shape[1]!;
    if (n === 0) return;
    // Row-major dw [n,k] = dyᵀ [n,m] · x [m,k]: dy is read transposed, the inner size is m.
    const product = {
      dtype: dy.desc.dtype,
      transA: true,
      transB: false,
      m: n,
      n: k,
      k: m,
      alpha: 1,
      beta: accumulate ? 1 : 0,
      a: dy.ptr,
      b: x.ptr,
      c: dw.ptr,
    };
    if (!accumulate && FUSED && ctx.matmul({ ...product, epilogue: 'bgrad', bias: db.ptr })) return;
    ctx.gemm({ ...product, precision: 'default' });
    columnSum(ctx, dy, db, accumulate);
  },
};

/**
 * db (+)= Σ_rows dy from two deterministic passes through f32 (f64) scratch: partial sums per row
 * chunk (16-byte vector loads where dy allows them), then their sum.
 */
export function columnSum(ctx: CudaKernelContext, dy: CudaArg, db: CudaArg, accumulate: boolean): void {
  const [m, n] = dy.desc.shape as [number, number];
  const vector = VECTOR_SUM && vectorColumnSum(dy.desc.dtype, n, dy.ptr);
  const { chunks, rowsPerChunk } = columnChunks(m, n, ctx.smCount, vector);
  const part = ctx.scratch(chunks * n * (dy.desc.dtype === 'f64' ? 8 : 4));
  ctx.launch(vector ? columnPartialVecProgram : columnPartialProgram, [dy], {
    part,
    chunks,
    rows: rowsPerChunk,
  });
  ctx.launch(columnFinalProgram, [db], { part, chunks, accumulate });
}
