/**
 * pool2d and pool2d_backward on CUDA: direct kernels, one thread per output element (forward) or per
 * dx element (backward, which gathers from every window holding the element, so nothing is added
 * twice and no atomics are needed; max recomputes each window's first maximum, as pool2d picks it).
 * OP 0 = max, 1 = avg.
 */
import type { Scalars } from '../../devices/device.js';
import type { CudaArgDesc, CudaParam, CudaProgram } from '../../devices/cuda/kernel-api.js';
import { BLOCK_DIM, count, elementwiseGrid } from '../common/cuda.js';
import { POOL_OPS, type PoolGeometry, poolGeometry } from './geometry.js';

const DIMS = 'int H, int W, int HO, int WO, int K, int S, int PAD';

export const POOL_CUDA_SOURCE = `
// t = (rest·A + a)·B + b over [rest][A][B]: rest, a and b, in 32-bit arithmetic when \`narrow\` (the
// element count fits; 64-bit divisions cost more).
static __device__ __forceinline__ void split_index(long long t, int A, int B, bool narrow, long long& rest, int& a, int& b) {
  if (narrow) {
    const unsigned u = (unsigned)t, r = u / (unsigned)B;
    b = (int)(u - r * (unsigned)B);
    a = (int)(r % (unsigned)A);
    rest = r / (unsigned)A;
  } else {
    b = (int)(t % B);
    a = (int)((t / B) % A);
    rest = t / ((long long)A * B);
  }
}
// Index (within the plane) of the first maximum of window (i, j); a NaN, once met, stays.
static __device__ __forceinline__ int window_argmax(const X_t* __restrict__ x, long long plane, ${DIMS}, int i, int j) {
  const int h0 = i * S - PAD, w0 = j * S - PAD;
  int best = -1;
  X_c bv = (X_c)0;
  for (int h = max(h0, 0); h < min(h0 + K, H); h++) {
    for (int w = max(w0, 0); w < min(w0 + K, W); w++) {
      const X_c v = ldX(x, plane + h * W + w);
      if (best < 0 || v > bv || (v != v && bv == bv)) { best = h * W + w; bv = v; }
    }
  }
  return best;
}

extern "C" __global__ void tdm_pool2d(const X_t* __restrict__ x, X_t* __restrict__ y, ${DIMS}, long long total) {
  const bool narrow = total <= 2147483647LL;
  for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < total; t += (long long)gridDim.x * blockDim.x) {
    int i, j;
    long long nc;
    split_index(t, HO, WO, narrow, nc, i, j);
    const long long plane = nc * H * W;
#if OP == 0
    stX(y, t, ldX(x, plane + window_argmax(x, plane, H, W, HO, WO, K, S, PAD, i, j)));
#else
    const int h0 = i * S - PAD, w0 = j * S - PAD;
    X_c sum = (X_c)0;
    for (int h = max(h0, 0); h < min(h0 + K, H); h++)
      for (int w = max(w0, 0); w < min(w0 + K, W); w++) sum += ldX(x, plane + h * W + w);
    stX(y, t, sum / (X_c)(K * K));
#endif
  }
}

extern "C" __global__ void tdm_pool2d_backward(const X_t* __restrict__ x, const X_t* __restrict__ dy, X_t* __restrict__ dx, ${DIMS}, long long total) {
  const bool narrow = total <= 2147483647LL;
  for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < total; t += (long long)gridDim.x * blockDim.x) {
    int h, w;
    long long nc;
    split_index(t, H, W, narrow, nc, h, w);
    const long long plane = nc * H * W;
    // Windows i with i·S − PAD ≤ h < i·S − PAD + K, i.e. ⌈(h + PAD − K + 1)/S⌉ ≤ i ≤ ⌊(h + PAD)/S⌋.
    const int ilo = max(0, (h + PAD - K + S) / S), ihi = min(HO - 1, (h + PAD) / S);
    const int jlo = max(0, (w + PAD - K + S) / S), jhi = min(WO - 1, (w + PAD) / S);
    X_c acc = (X_c)0;
    for (int i = ilo; i <= ihi; i++) {
      for (int j = jlo; j <= jhi; j++) {
        const X_c d = ldX(dy, (nc * HO + i) * WO + j);
#if OP == 0
        if (window_argmax(x, plane, H, W, HO, WO, K, S, PAD, i, j) == h * W + w) acc += d;
#else
        acc += d / (X_c)(K * K);
#endif
      }
    }
    stX(dx, t, acc);
  }
}
`;

function dims(g: PoolGeometry): CudaParam[] {
  return [g.h, g.w, g.ho, g.wo, g.kernel, g.stride, g.padding].map((value) => ({ kind: 'i32', value }));
}

export function poolProgram(entry: string, name: string, tensors: number, totalArg: number): CudaProgram {
  return {
    kind: 'program',
    source: POOL_CUDA_SOURCE,
    entry,
    dtypes: (args: readonly CudaArgDesc[]) => ({ X: args[0]!.desc.dtype }),
    defines: (args: readonly CudaArgDesc[], scalars: Scalars) => ({
      OP: POOL_OPS.indexOf(poolGeometry(args[0]!.desc.shape, scalars, name).op),
    }),
    grid: (args) => elementwiseGrid(count(args[totalArg]!)),
    block: () => BLOCK_DIM,
    params: (args, scalars) => [
      ...Array.from({ length: tensors }, (_, arg): CudaParam => ({ kind: 'ptr', arg })),
      ...dims(poolGeometry(args[0]!.desc.shape, scalars, name)),
      { kind: 'i64', value: count(args[totalArg]!) },
    ],
  };
}

/** One thread per element of y. */
export const pool2dCuda = poolProgram('tdm_pool2d', 'pool2d', 2, 1);
