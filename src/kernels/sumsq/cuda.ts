/**
 * sumsq on CUDA: two passes like reduce's reduce-all: per-block partial sums of x² in double (in
 * scratch memory), then one block adds them to acc and rounds once. Deterministic (no atomics), so the
 * same gradients give the same norm bit for bit, and accurate for f32 accumulators.
 */
import type { Scalars } from '../../devices/device.js';
import type { CudaArgDesc, CudaNative, CudaProgram } from '../../devices/cuda/kernel-api.js';
import { BLOCK, BLOCK_DIM, count } from '../common/cuda.js';

const SOURCE = `
static __device__ double tdm_block_sum(double v) {
  __shared__ double sh[${BLOCK}];
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  const double r = sh[0];
  __syncthreads();
  return r;
}
extern "C" __global__ void tdm_sumsq_partial(const X_t* __restrict__ x, double* __restrict__ partial, long long n) {
  double s = 0.0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const double v = (double)ldX(x, i);
    s += v * v;
  }
  s = tdm_block_sum(s);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}
extern "C" __global__ void tdm_sumsq_final(const double* __restrict__ partial, A_t* __restrict__ acc, int parts) {
  double s = 0.0;
  for (int i = threadIdx.x; i < parts; i += blockDim.x) s += partial[i];
  s = tdm_block_sum(s);
  if (threadIdx.x == 0) stA(acc, 0, (double)ldA(acc, 0) + s);
}
`;

/** Blocks of the first pass: each thread sums at least 8 elements; at most 1024 partials. */
const PARTS_MAX = 1024;

interface Launch {
  readonly parts: number;
  readonly partial: number;
}
const L = (scalars: Scalars): Launch => scalars as unknown as Launch;

const common = {
  kind: 'program' as const,
  source: SOURCE,
  dtypes: (args: readonly CudaArgDesc[]) => ({ X: args[0]!.desc.dtype, A: args[1]!.desc.dtype }),
  block: () => BLOCK_DIM,
};

const PARTIAL: CudaProgram = {
  ...common,
  entry: 'tdm_sumsq_partial',
  grid: (_a, s) => [L(s).parts, 1, 1],
  params: (args, s) => [
    { kind: 'ptr', arg: 0 },
    { kind: 'addr', value: L(s).partial },
    { kind: 'i64', value: count(args[0]!) },
  ],
};

const FINAL: CudaProgram = {
  ...common,
  entry: 'tdm_sumsq_final',
  grid: () => [1, 1, 1],
  params: (_a, s) => [
    { kind: 'addr', value: L(s).partial },
    { kind: 'ptr', arg: 1 },
    { kind: 'i32', value: L(s).parts },
  ],
};

export const sumsqCuda: CudaNative = {
  kind: 'native',
  run(ctx, args) {
    const parts = Math.max(1, Math.min(PARTS_MAX, Math.ceil(count(args[0]!) / (BLOCK * 8))));
    const launch: Launch = { parts, partial: ctx.scratch(parts * 8) };
    const s = launch as unknown as Scalars;
    ctx.launch(PARTIAL, args, s);
    ctx.launch(FINAL, args, s);
  },
};
