/**
 * reduce on CUDA. Along an axis: one block per output element over the [outer, len, inner] view.
 * Over all elements: a two-pass reduction (per-block partials in scratch memory, then one block), so
 * a large tensor uses the whole GPU instead of one multiprocessor.
 */
import type { Scalars } from '../../devices/device.js';
import type { CudaArgDesc, CudaNative, CudaProgram } from '../../devices/cuda/kernel-api.js';
import { BLOCK, BLOCK_DIM } from '../common/cuda.js';
import { REDUCE_OPS, reduceLayout } from './params.js';

const SOURCE = `
static __device__ __forceinline__ X_c comb(X_c a, X_c b) {
#if OP == 1
  return (a > b || a != a) ? a : b;
#else
  return a + b;
#endif
}
#if OP == 1
#define INIT (-(X_c)__int_as_float(0x7f800000))
#else
#define INIT ((X_c)0)
#endif
static __device__ X_c block_reduce(X_c v) {
  __shared__ X_c sh[${BLOCK}];
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) sh[threadIdx.x] = comb(sh[threadIdx.x], sh[threadIdx.x + s]);
    __syncthreads();
  }
  X_c r = sh[0];
  __syncthreads();
  return r;
}
extern "C" __global__ void tdm_reduce_axis(const X_t* __restrict__ x, X_t* __restrict__ y, long long outer, long long len, long long inner) {
  for (long long o = blockIdx.x; o < outer * inner; o += gridDim.x) {
    const long long base = (o / inner) * len * inner + (o % inner);
    X_c acc = INIT;
    for (long long j = threadIdx.x; j < len; j += blockDim.x) acc = comb(acc, ldX(x, base + j * inner));
    acc = block_reduce(acc);
#if OP == 2
    acc = acc / (X_c)len;
#endif
    if (threadIdx.x == 0) stX(y, o, acc);
  }
}
extern "C" __global__ void tdm_reduce_partial(const X_t* __restrict__ x, X_c* __restrict__ partial, long long n) {
  X_c acc = INIT;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) acc = comb(acc, ldX(x, i));
  acc = block_reduce(acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}
extern "C" __global__ void tdm_reduce_final(const X_c* __restrict__ partial, X_t* __restrict__ y, int parts, long long n) {
  X_c acc = INIT;
  for (int i = threadIdx.x; i < parts; i += blockDim.x) acc = comb(acc, partial[i]);
  acc = block_reduce(acc);
#if OP == 2
  acc = acc / (X_c)n;
#endif
  if (threadIdx.x == 0) stX(y, 0, acc);
}
`;

const MAX_GRID = 1 << 16;
const PARTS_MAX = 1024;

/**
 * The three programs are constants (the program cache is keyed by program identity); what varies per
 * launch (layout, scratch address) travels in the scalars handed to ctx.launch.
 */
interface Launch {
  readonly op: number;
  readonly outer: number;
  readonly len: number;
  readonly inner: number;
  readonly parts: number;
  readonly partial: number;
}
const L = (scalars: Scalars): Launch => scalars as unknown as Launch;

const common = {
  kind: 'program' as const,
  source: SOURCE,
  dtypes: (args: readonly CudaArgDesc[]) => ({ X: args[0]!.desc.dtype }),
  defines: (_args: readonly CudaArgDesc[], scalars: Scalars) => ({ OP: L(scalars).op }),
  block: () => BLOCK_DIM,
};

const AXIS: CudaProgram = {
  ...common,
  entry: 'tdm_reduce_axis',
  grid: (_a, s) => [Math.max(1, Math.min(L(s).outer * L(s).inner, MAX_GRID)), 1, 1],
  params: (_a, s) => [
    { kind: 'ptr', arg: 0 },
    { kind: 'ptr', arg: 1 },
    { kind: 'i64', value: L(s).outer },
    { kind: 'i64', value: L(s).len },
    { kind: 'i64', value: L(s).inner },
  ],
};

const PARTIAL: CudaProgram = {
  ...common,
  entry: 'tdm_reduce_partial',
  grid: (_a, s) => [L(s).parts, 1, 1],
  params: (_a, s) => [
    { kind: 'ptr', arg: 0 },
    { kind: 'addr', value: L(s).partial },
    { kind: 'i64', value: L(s).len },
  ],
};

const FINAL: CudaProgram = {
  ...common,
  entry: 'tdm_reduce_final',
  grid: () => [1, 1, 1],
  params: (_a, s) => [
    { kind: 'addr', value: L(s).partial },
    { kind: 'ptr', arg: 1 },
    { kind: 'i32', value: L(s).parts },
    { kind: 'i64', value: L(s).len },
  ],
};

export const reduceCuda: CudaNative = {
  kind: 'native',
  run(ctx, args, scalars) {
    const layout = reduceLayout(args[0]!.desc.shape, scalars);
    const op = REDUCE_OPS.indexOf(layout.op);
    const outputs = layout.outer * layout.inner;
    if (outputs === 1 && layout.len > BLOCK * 4) {
      // Enough blocks to cover the GPU, each thread reducing at least 4 elements.
      const parts = Math.max(1, Math.min(PARTS_MAX, Math.ceil(layout.len / (BLOCK * 4))));
      const launch: Launch = {
        op,
        outer: 1,
        len: layout.len,
        inner: 1,
        parts,
        partial: ctx.scratch(parts * 8),
      };
      const s = launch as unknown as Scalars;
      ctx.launch(PARTIAL, args, s);
      ctx.launch(FINAL, args, s);
      return;
    }
    const launch: Launch = {
      op,
      outer: layout.outer,
      len: layout.len,
      inner: layout.inner,
      parts: 0,
      partial: 0,
    };
    ctx.launch(AXIS, args, launch as unknown as Scalars);
  },
};
