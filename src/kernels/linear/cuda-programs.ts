/**
 * The NVRTC programs the linear ops fall back on where no cuBLASLt epilogue runs (f64, shapes or
 * alignments cuBLASLt declines, accumulation): the bias broadcast that a beta = 1 gemm then adds to,
 * and the column sums of dy for the bias gradient.
 */
import type { CudaProgram } from '../../devices/cuda/kernel-api.js';
import { BLOCK_DIM, GRID_STRIDE, elementwiseGrid } from '../common/cuda.js';

/** Rows of each launch of the column sum that one block covers per step (blockDim.y). */
const SUM_ROWS = 8;
/** Columns per block (blockDim.x = one warp, so each row's loads are coalesced). */
const SUM_COLS = 32;

/** args: [b [n], y [m,n]]: y[i,j] = b[j] (copied exactly, so gemm's beta = 1 adds x·wᵀ to it). */
export const biasRowsProgram: CudaProgram = {
  kind: 'program',
  entry: 'tdm_bias_rows',
  source: `extern "C" __global__ void tdm_bias_rows(const X_t* __restrict__ b, X_t* __restrict__ y, long long n, long long cols) {
  ${GRID_STRIDE} y[i] = b[i % cols];
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  grid: (args) => elementwiseGrid(args[1]!.desc.shape[0]! * args[1]!.desc.shape[1]!),
  block: () => BLOCK_DIM,
  params: (args) => [
    { kind: 'ptr', arg: 0 },
    { kind: 'ptr', arg: 1 },
    { kind: 'i64', value: args[1]!.desc.shape[0]! * args[1]!.desc.shape[1]! },
    { kind: 'i64', value: args[1]!.desc.shape[1]! },
  ],
};

/**
 * args: [dy [m,n], db [n]]: db[j] (+)= Σ_i dy[i,j] (ACC from scalars.accumulate), accumulated in f32
 * (f64 for f64). A block of 32 x 8 threads owns 32 columns; its 8 rows of threads stride down the
 * matrix and their partial sums meet in shared memory.
 */
export const columnSumProgram: CudaProgram = {
  kind: 'program',
  entry: 'tdm_column_sum',
  source: `extern "C" __global__ void tdm_column_sum(const X_t* __restrict__ dy, X_t* __restrict__ db, long long m, long long n) {
  __shared__ X_c part[${SUM_ROWS}][${SUM_COLS}];
  const long long j = (long long)blockIdx.x * ${SUM_COLS} + threadIdx.x;
  X_c s = (X_c)0;
  if (j < n) for (long long i = threadIdx.y; i < m; i += ${SUM_ROWS}) s += ldX(dy, i * n + j);
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && j < n) {
    X_c t = (X_c)0;
    for (int r = 0; r < ${SUM_ROWS}; r++) t += part[r][threadIdx.x];
#if ACC
    t += ldX(db, j);
#endif
    stX(db, j, t);
  }
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  defines: (_args, scalars) => ({ ACC: scalars.accumulate === true ? 1 : 0 }),
  grid: (args) => [Math.ceil(args[0]!.desc.shape[1]! / SUM_COLS), 1, 1],
  block: () => [SUM_COLS, SUM_ROWS, 1],
  params: (args) => [
    { kind: 'ptr', arg: 0 },
    { kind: 'ptr', arg: 1 },
    { kind: 'i64', value: args[0]!.desc.shape[0]! },
    { kind: 'i64', value: args[0]!.desc.shape[1]! },
  ],
};
