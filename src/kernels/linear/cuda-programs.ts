/**
 * The NVRTC programs the linear ops fall back on where no cuBLASLt epilogue runs (f64, shapes or
 * alignments cuBLASLt declines, accumulation): the bias broadcast that a beta = 1 gemm then adds to,
 * and the column sums of dy for the bias gradient.
 */
import type { Scalars } from '../../devices/device.js';
import type { CudaArgDesc, CudaParam, CudaProgram } from '../../devices/cuda/kernel-api.js';
import { BLOCK_DIM, GRID_STRIDE, elementwiseGrid } from '../common/cuda.js';

/** A numeric launch parameter the native impl passed as a scalar. */
function num(scalars: Scalars, name: string): number {
  return scalars[name] as number;
}

/** Rows of each launch of the column sum that one block covers per step (blockDim.y). */
const SUM_ROWS = 8;
/** Columns per block (blockDim.x = one warp, so each row's loads are coalesced). */
const SUM_COLS = 32;
/** 16-bit values per thread and row in the vector column sum (one 16-byte load). */
const VEC = 8;

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

/** The partial pass's parameters (both texts): dy, the scratch address, m, n, rows per chunk. */
function columnPartialParams(args: readonly CudaArgDesc[], scalars: Scalars): CudaParam[] {
  return [
    { kind: 'ptr', arg: 0 },
    { kind: 'addr', value: num(scalars, 'part') },
    { kind: 'i64', value: args[0]!.desc.shape[0]! },
    { kind: 'i64', value: args[0]!.desc.shape[1]! },
    { kind: 'i64', value: num(scalars, 'rows') },
  ];
}

/**
 * The bias gradient in two passes, so a tall dy (65536 rows) still spreads over the whole GPU:
 * `columnPartialProgram` gives each block 32 columns and one chunk of rows (blockIdx.y), its 32 x 8
 * threads striding down the chunk and meeting in shared memory, and writes one partial sum per
 * (chunk, column) into f32 (f64) scratch; `columnFinalProgram` adds a column's partials, plus the old
 * db when accumulating (ACC), and stores it. Deterministic: a fixed order everywhere.
 *
 * args of the partial pass: [dy [m,n]]; its scalars: part (the scratch address), chunks, rows (per
 * chunk). The programs are constants: the program cache keys compiled functions on the object.
 */
export const columnPartialProgram: CudaProgram = {
  kind: 'program',
  entry: 'tdm_column_partial',
  source: `extern "C" __global__ void tdm_column_partial(const X_t* __restrict__ dy, X_c* __restrict__ part, long long m, long long n, long long rows) {
  __shared__ X_c sh[${SUM_ROWS}][${SUM_COLS}];
  const long long j = (long long)blockIdx.x * ${SUM_COLS} + threadIdx.x;
  const long long r0 = (long long)blockIdx.y * rows;
  const long long r1 = r0 + rows < m ? r0 + rows : m;
  X_c s = (X_c)0;
  if (j < n) for (long long i = r0 + threadIdx.y; i < r1; i += ${SUM_ROWS}) s += ldX(dy, i * n + j);
  sh[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && j < n) {
    X_c t = (X_c)0;
    for (int r = 0; r < ${SUM_ROWS}; r++) t += sh[r][threadIdx.x];
    part[(long long)blockIdx.y * n + j] = t;
  }
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  grid: (args, scalars) => [Math.ceil(args[0]!.desc.shape[1]! / SUM_COLS), num(scalars, 'chunks'), 1],
  block: () => [SUM_COLS, SUM_ROWS, 1],
  params: columnPartialParams,
};

/**
 * `columnPartialProgram` for 16-bit dy whose rows are whole 16-byte vectors (n a multiple of 8, dy
 * 16-byte aligned): each thread loads 8 columns at once, so a warp reads 512 contiguous bytes of a row
 * instead of 64 and a block covers 256 columns; four loads are kept in flight per thread. The partial
 * sums (same layout, f32) are added in the same order as the scalar program's for each column: rows
 * r0 + y, r0 + y + 8, … per thread y, then the 8 threads in order. GPT-2's dy [65536, 2304] took 91 µs
 * through the scalar program on an H200 (3.3 TB/s).
 */
export const columnPartialVecProgram: CudaProgram = {
  kind: 'program',
  entry: 'tdm_column_partial_v8',
  source: `extern "C" __global__ void tdm_column_partial_v8(const uint4* __restrict__ dy, float* __restrict__ part, long long m, long long n, long long rows) {
  __shared__ float sh[${SUM_ROWS}][${SUM_COLS * VEC} + 1];
  const long long groups = n / ${VEC};
  const long long g = (long long)blockIdx.x * ${SUM_COLS} + threadIdx.x;
  const long long r0 = (long long)blockIdx.y * rows;
  const long long r1 = r0 + rows < m ? r0 + rows : m;
  float s[${VEC}];
#pragma unroll
  for (int k = 0; k < ${VEC}; k++) s[k] = 0.f;
  if (g < groups) {
#pragma unroll 4
    for (long long i = r0 + threadIdx.y; i < r1; i += ${SUM_ROWS}) {
      const uint4 v = dy[i * groups + g];
      const X_t* h = reinterpret_cast<const X_t*>(&v);
#pragma unroll
      for (int k = 0; k < ${VEC}; k++) s[k] += ldX(h, k);
    }
  }
#pragma unroll
  for (int k = 0; k < ${VEC}; k++) sh[threadIdx.y][threadIdx.x * ${VEC} + k] = s[k];
  __syncthreads();
  const int t = threadIdx.y * ${SUM_COLS} + threadIdx.x;
  const long long j = (long long)blockIdx.x * ${SUM_COLS * VEC} + t;
  if (j < n) {
    float tot = 0.f;
    for (int r = 0; r < ${SUM_ROWS}; r++) tot += sh[r][t];
    part[(long long)blockIdx.y * n + j] = tot;
  }
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  grid: (args, scalars) => [Math.ceil(args[0]!.desc.shape[1]! / (SUM_COLS * VEC)), num(scalars, 'chunks'), 1],
  block: () => [SUM_COLS, SUM_ROWS, 1],
  params: columnPartialParams,
};

/** Whether dy [m, n] can take the 16-byte vector column sum: 16-bit, n % 8 = 0, 16-byte aligned. */
export function vectorColumnSum(dtype: string, n: number, ptr: number): boolean {
  return (dtype === 'bf16' || dtype === 'f16') && n % VEC === 0 && ptr % 16 === 0;
}

/** args: [db [n]]; scalars part, chunks, accumulate: db[j] = Σ_c part[c, j] (+ db[j] with ACC). */
export const columnFinalProgram: CudaProgram = {
  kind: 'program',
  entry: 'tdm_column_final',
  source: `extern "C" __global__ void tdm_column_final(const X_c* __restrict__ part, X_t* __restrict__ db, int chunks, long long n) {
  ${GRID_STRIDE} {
    X_c t = (X_c)0;
    for (int c = 0; c < chunks; c++) t += part[(long long)c * n + i];
#if ACC
    t += ldX(db, i);
#endif
    stX(db, i, t);
  }
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  defines: (_args, scalars) => ({ ACC: scalars.accumulate === true ? 1 : 0 }),
  grid: (args) => elementwiseGrid(args[0]!.desc.shape[0]!),
  block: () => BLOCK_DIM,
  params: (args, scalars) => [
    { kind: 'addr', value: num(scalars, 'part') },
    { kind: 'ptr', arg: 0 },
    { kind: 'i32', value: num(scalars, 'chunks') },
    { kind: 'i64', value: args[0]!.desc.shape[0]! },
  ],
};

/** Row chunks for the partial pass: about four blocks per multiprocessor, at least 8 rows each. */
export function columnChunks(
  m: number,
  n: number,
  smCount: number,
  vector = false,
): { chunks: number; rowsPerChunk: number } {
  const columnBlocks = Math.max(1, Math.ceil(n / (vector ? SUM_COLS * VEC : SUM_COLS)));
  const chunks = Math.max(
    1,
    Math.min(Math.ceil((4 * smCount) / columnBlocks), Math.ceil(m / SUM_ROWS), 65535),
  );
  return { chunks, rowsPerChunk: Math.max(1, Math.ceil(m / chunks)) };
}
