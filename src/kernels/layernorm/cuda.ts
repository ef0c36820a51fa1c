/**
 * layernorm (and residual_layernorm, RESID = 1) on CUDA: one warp per row, 8 rows per block of 256.
 * Three sweeps over the row — sum, sum of squared deviations (two-pass variance, as accurate as the
 * reference's), normalize — with 16-byte vector loads; the second and third sweeps re-read the row
 * from L1/L2 (one row is C·2 bytes for bf16), so DRAM sees x once and y once. Statistics accumulate
 * in X_c (f32, f64 for f64) and reduce with warp shuffles; no shared memory, no block barrier.
 * residual_layernorm stores s = a + r in the first sweep and normalizes the stored (rounded) value.
 */
import { numel } from '../../core/shape.js';
import type { Scalars } from '../../devices/device.js';
import type {
  CudaArg,
  CudaKernelContext,
  CudaNative,
  CudaParam,
  CudaProgram,
} from '../../devices/cuda/kernel-api.js';
import { NORM_CUDA, vectorWidth } from '../common/norm-cuda.js';
import { epsScalar } from '../common/norm-checks.js';

const SOURCE = `${NORM_CUDA}
extern "C" __global__ void tdm_layernorm(
#if RESID
    const X_t* __restrict__ a, const X_t* __restrict__ r, X_t* s,
#else
    const X_t* __restrict__ x,
#endif
    const X_t* __restrict__ w, const X_t* __restrict__ b, X_t* __restrict__ y,
    S_t* __restrict__ mean, S_t* __restrict__ rstd, long long rows, int C, double eps) {
  const int lane = threadIdx.x & 31;
  const long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (row >= rows) return;  // the whole warp leaves together: the shuffles below stay full-warp
  const long long base = row * (long long)C;
#if RESID
  const X_t* x = s;
#endif
  X_c v[VEC];
  X_c sum = (X_c)0;
#pragma unroll 4
  for (int j = lane * VEC; j < C; j += 32 * VEC) {
#if RESID
    X_c u[VEC];
    nrm_ld(a, base + j, v);
    nrm_ld(r, base + j, u);
#pragma unroll
    for (int k = 0; k < VEC; k++) v[k] = v[k] + u[k];
    nrm_st(s, base + j, v);
#pragma unroll
    for (int k = 0; k < VEC; k++) v[k] = nrm_round(v[k]);
#else
    nrm_ld(x, base + j, v);
#endif
#pragma unroll
    for (int k = 0; k < VEC; k++) sum += v[k];
  }
  const X_c mu = nrm_warp_sum(sum) / (X_c)C;
  X_c sq = (X_c)0;
#pragma unroll 4
  for (int j = lane * VEC; j < C; j += 32 * VEC) {
    nrm_ld(x, base + j, v);
#pragma unroll
    for (int k = 0; k < VEC; k++) { const X_c d = v[k] - mu; sq += d * d; }
  }
  const X_c rs = (X_c)1 / m_sqrt(nrm_warp_sum(sq) / (X_c)C + (X_c)eps);
#pragma unroll 4
  for (int j = lane * VEC; j < C; j += 32 * VEC) {
    X_c wv[VEC], bv[VEC];
    nrm_ld(x, base + j, v);
    nrm_ld(w, j, wv);
    nrm_ld(b, j, bv);
#pragma unroll
    for (int k = 0; k < VEC; k++) v[k] = (v[k] - mu) * rs * wv[k] + bv[k];
    nrm_st(y, base + j, v);
  }
  if (lane == 0) { stS(mean, row, mu); stS(rstd, row, rs); }
}
`;

const ROWS_PER_BLOCK = 8;

interface LnLaunch {
  readonly rows: number;
  readonly cols: number;
  readonly vec: number;
  readonly eps: number;
}
const L = (s: Scalars): LnLaunch => s as unknown as LnLaunch;

export function lnProgram(resid: boolean): CudaProgram {
  // Argument indices: layernorm (x w b y mean rstd), residual_layernorm (a r s w b y mean rstd).
  const tensors = resid ? [0, 1, 2, 3, 4, 5, 6, 7] : [0, 1, 2, 3, 4, 5];
  return {
    kind: 'program',
    source: SOURCE,
    entry: 'tdm_layernorm',
    dtypes: (args) => ({ X: args[0]!.desc.dtype, S: args[args.length - 1]!.desc.dtype }),
    defines: (_a, s) => ({ VEC: L(s).vec, RESID: resid ? 1 : 0 }),
    grid: (_a, s) => [Math.ceil(L(s).rows / ROWS_PER_BLOCK), 1, 1],
    block: () => [32 * ROWS_PER_BLOCK, 1, 1],
    params: (_a, s): CudaParam[] => [
      ...tensors.map((arg): CudaParam => ({ kind: 'ptr', arg })),
      { kind: 'i64', value: L(s).rows },
      { kind: 'i32', value: L(s).cols },
      { kind: 'f64', value: L(s).eps },
    ],
  };
}

const LAYERNORM = lnProgram(false);

/** Picks the vector width and launches `program` (layernorm's or residual_layernorm's). */
export function runLayernorm(
  op: string,
  program: CudaProgram,
  ctx: CudaKernelContext,
  args: readonly CudaArg[],
  scalars: Scalars,
): void {
  const x = args[0]!.desc;
  const cols = x.shape[x.shape.length - 1]!;
  // The float tensors (not the statistics) must allow the vector width.
  const floats = args.filter((a) => a.desc.dtype === x.dtype);
  const launch: LnLaunch = {
    rows: numel(x.shape) / cols,
    cols,
    vec: vectorWidth(x.dtype, cols, floats),
    eps: epsScalar(op, scalars),
  };
  ctx.launch(program, args, launch as unknown as Scalars);
}

export const layernormCuda: CudaNative = {
  kind: 'native',
  run: (ctx, args, scalars) => runLayernorm('layernorm', LAYERNORM, ctx, args, scalars),
};
