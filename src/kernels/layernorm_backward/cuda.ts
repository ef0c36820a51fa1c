/**
 * layernorm_backward on CUDA, two launches:
 * 1. Rows: one warp per row (grid-stride over rows, at most four blocks per SM). Sweep one sums
 *    g = dy·w and g·x̂ (warp shuffles) and the row's dy·x̂ and dy into the column sums; sweep two writes
 *    dx (re-reading the row from L1/L2). Each block then writes its column sums to scratch:
 *    partial[block][2][C].
 *    - tdm_lnb_rows_reg (rows of up to 32·REG_COLS elements, every model width): a lane always sees the
 *      same columns, so it keeps their sums in registers across all its rows and adds them into shared
 *      memory once, at the end. Per-element shared atomics (the first version) made the backward pass
 *      0.42× PyTorch's at 65,536×768 bf16: 8 warps contending for the same 2·C addresses.
 *    - tdm_lnb_rows (wider rows): per-element shared atomics.
 * 2. tdm_lnb_cols: sums the partials of each column (32 columns × 8 partial groups per block, then a
 *    shared-memory reduction) and writes dw, db (+= with accumulate).
 * Column sums in f32 shared atomics are not bitwise deterministic from run to run (the order of the
 * adds varies); dx is.
 */
import { TandemError } from '../../core/errors.js';
import type { DType } from '../../core/dtype.js';
import { numel } from '../../core/shape.js';
import type { Scalars } from '../../devices/device.js';
import type { CudaArgDesc, CudaNative, CudaProgram } from '../../devices/cuda/kernel-api.js';
import { NORM_CUDA, vectorWidth } from '../common/norm-cuda.js';
import { accumulateScalar } from '../common/norm-checks.js';

const SOURCE = `${NORM_CUDA}
#ifndef ITERS
#define ITERS 1
#endif
extern "C" __global__ void tdm_lnb_rows(const X_t* __restrict__ dy, const X_t* __restrict__ x,
    const X_t* __restrict__ w, const S_t* __restrict__ mean, const S_t* __restrict__ rstd,
    X_t* __restrict__ dx, A_t* __restrict__ partial, long long rows, int C, int accDx) {
  extern __shared__ double nrm_shared[];
  A_t* sdw = reinterpret_cast<A_t*>(nrm_shared);
  A_t* sdb = sdw + C;
  for (int j = threadIdx.x; j < 2 * C; j += blockDim.x) sdw[j] = (A_t)0;
  __syncthreads();
  const int lane = threadIdx.x & 31;
  const int warps = blockDim.x >> 5;
  for (long long row = (long long)blockIdx.x * warps + (threadIdx.x >> 5); row < rows;
       row += (long long)gridDim.x * warps) {
    const long long base = row * (long long)C;
    const X_c mu = (X_c)ldS(mean, row);
    const X_c rs = (X_c)ldS(rstd, row);
    X_c sg = (X_c)0, sgx = (X_c)0;
#pragma unroll 4
    for (int j = lane * VEC; j < C; j += 32 * VEC) {
      X_c d[VEC], xv[VEC], wv[VEC];
      nrm_ld(dy, base + j, d);
      nrm_ld(x, base + j, xv);
      nrm_ld(w, j, wv);
#pragma unroll
      for (int k = 0; k < VEC; k++) {
        const X_c xh = (xv[k] - mu) * rs;
        const X_c g = d[k] * wv[k];
        sg += g;
        sgx += g * xh;
        atomicAdd(&sdw[j + k], (A_t)(d[k] * xh));
        atomicAdd(&sdb[j + k], (A_t)d[k]);
      }
    }
    const X_c ma = nrm_warp_sum(sg) / (X_c)C;
    const X_c mc = nrm_warp_sum(sgx) / (X_c)C;
#pragma unroll 4
    for (int j = lane * VEC; j < C; j += 32 * VEC) {
      X_c d[VEC], xv[VEC], wv[VEC], out[VEC];
      nrm_ld(dy, base + j, d);
      nrm_ld(x, base + j, xv);
      nrm_ld(w, j, wv);
#pragma unroll
      for (int k = 0; k < VEC; k++) out[k] = rs * (d[k] * wv[k] - ma - (xv[k] - mu) * rs * mc);
      if (accDx) {
        X_c old[VEC];
        nrm_ld(dx, base + j, old);
#pragma unroll
        for (int k = 0; k < VEC; k++) out[k] += old[k];
      }
      nrm_st(dx, base + j, out);
    }
  }
  __syncthreads();
  A_t* mine = partial + (long long)blockIdx.x * 2 * C;
  for (int j = threadIdx.x; j < 2 * C; j += blockDim.x) mine[j] = sdw[j];
}

// As tdm_lnb_rows, with each lane's column sums in registers: lane l owns columns (it·32 + l)·VEC + k.
extern "C" __global__ void tdm_lnb_rows_reg(const X_t* __restrict__ dy, const X_t* __restrict__ x,
    const X_t* __restrict__ w, const S_t* __restrict__ mean, const S_t* __restrict__ rstd,
    X_t* __restrict__ dx, A_t* __restrict__ partial, long long rows, int C, int accDx) {
  extern __shared__ double nrm_shared[];
  A_t* sdw = reinterpret_cast<A_t*>(nrm_shared);
  A_t* sdb = sdw + C;
  for (int j = threadIdx.x; j < 2 * C; j += blockDim.x) sdw[j] = (A_t)0;
  const int lane = threadIdx.x & 31;
  const int warps = blockDim.x >> 5;
  A_t aw[ITERS * VEC], ab[ITERS * VEC];
#pragma unroll
  for (int k = 0; k < ITERS * VEC; k++) { aw[k] = (A_t)0; ab[k] = (A_t)0; }
  for (long long row = (long long)blockIdx.x * warps + (threadIdx.x >> 5); row < rows;
       row += (long long)gridDim.x * warps) {
    const long long base = row * (long long)C;
    const X_c mu = (X_c)ldS(mean, row);
    const X_c rs = (X_c)ldS(rstd, row);
    X_c sg = (X_c)0, sgx = (X_c)0;
#pragma unroll
    for (int it = 0; it < ITERS; it++) {
      const int j = (it * 32 + lane) * VEC;
      if (j < C) {
        X_c d[VEC], xv[VEC], wv[VEC];
        nrm_ld(dy, base + j, d);
        nrm_ld(x, base + j, xv);
        nrm_ld(w, j, wv);
#pragma unroll
        for (int k = 0; k < VEC; k++) {
          const X_c xh = (xv[k] - mu) * rs;
          const X_c g = d[k] * wv[k];
          sg += g;
          sgx += g * xh;
          aw[it * VEC + k] += (A_t)(d[k] * xh);
          ab[it * VEC + k] += (A_t)d[k];
        }
      }
    }
    const X_c ma = nrm_warp_sum(sg) / (X_c)C;
    const X_c mc = nrm_warp_sum(sgx) / (X_c)C;
#pragma unroll
    for (int it = 0; it < ITERS; it++) {
      const int j = (it * 32 + lane) * VEC;
      if (j < C) {
        X_c d[VEC], xv[VEC], wv[VEC], out[VEC];
        nrm_ld(dy, base + j, d);
        nrm_ld(x, base + j, xv);
        nrm_ld(w, j, wv);
#pragma unroll
        for (int k = 0; k < VEC; k++) out[k] = rs * (d[k] * wv[k] - ma - (xv[k] - mu) * rs * mc);
        if (accDx) {
          X_c old[VEC];
          nrm_ld(dx, base + j, old);
#pragma unroll
          for (int k = 0; k < VEC; k++) out[k] += old[k];
        }
        nrm_st(dx, base + j, out);
      }
    }
  }
  __syncthreads();
#pragma unroll
  for (int it = 0; it < ITERS; it++) {
    const int j = (it * 32 + lane) * VEC;
    if (j < C) {
#pragma unroll
      for (int k = 0; k < VEC; k++) {
        atomicAdd(&sdw[j + k], aw[it * VEC + k]);
        atomicAdd(&sdb[j + k], ab[it * VEC + k]);
      }
    }
  }
  __syncthreads();
  A_t* mine = partial + (long long)blockIdx.x * 2 * C;
  for (int j = threadIdx.x; j < 2 * C; j += blockDim.x) mine[j] = sdw[j];
}

// 256 threads: tx = threadIdx.x % 32 picks the column in a tile of 32, ty = threadIdx.x / 32 a group of
// partials (a 1-D block, as the host emulator of test/kernels/cuda-emu runs them).
extern "C" __global__ void tdm_lnb_cols(const A_t* __restrict__ partial, X_t* __restrict__ dw,
    X_t* __restrict__ db, int parts, int C, int accumulate) {
  __shared__ A_t sw[8][33];
  __shared__ A_t sb[8][33];
  const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
  const int j = blockIdx.x * 32 + tx;
  A_t aw = (A_t)0, ab = (A_t)0;
  if (j < C) {
    for (int p = ty; p < parts; p += 8) {
      aw += partial[(long long)p * 2 * C + j];
      ab += partial[(long long)p * 2 * C + C + j];
    }
  }
  sw[ty][tx] = aw;
  sb[ty][tx] = ab;
  __syncthreads();
  if (ty == 0 && j < C) {
    for (int q = 1; q < 8; q++) { aw += sw[q][tx]; ab += sb[q][tx]; }
    if (accumulate) { aw += (A_t)ldX(dw, j); ab += (A_t)ldX(db, j); }
    stX(dw, j, aw);
    stX(db, j, ab);
  }
}
`;

const WARPS = 8;
const SHARED_LIMIT = 48 * 1024;
/** The register path's limit: column sums a lane keeps (two arrays of this many). */
const REG_COLS = 32;

interface LnbLaunch {
  readonly rows: number;
  readonly cols: number;
  readonly vec: number;
  /** Column groups of 32·vec a lane walks: ceil(cols / (32·vec)). */
  readonly iters: number;
  readonly parts: number;
  readonly partial: number;
  readonly accumulate: number;
  readonly accDx: number;
}
const L = (s: Scalars): LnbLaunch => s as unknown as LnbLaunch;

function dtypes(args: readonly CudaArgDesc[]): Readonly<Record<string, DType>> {
  const x = args[1]!.desc.dtype;
  return { X: x, S: args[3]!.desc.dtype, A: x === 'f64' ? 'f64' : 'f32' };
}

const ROWS: CudaProgram = {
  kind: 'program',
  source: SOURCE,
  entry: 'tdm_lnb_rows',
  dtypes,
  defines: (_a, s) => ({ VEC: L(s).vec }),
  grid: (_a, s) => [L(s).parts, 1, 1],
  block: () => [32 * WARPS, 1, 1],
  sharedBytes: (args, s) => 2 * L(s).cols * (args[1]!.desc.dtype === 'f64' ? 8 : 4),
  params: (_a, s) => [
    ...[0, 1, 2, 3, 4, 5].map((arg) => ({ kind: 'ptr' as const, arg })),
    { kind: 'addr', value: L(s).partial },
    { kind: 'i64', value: L(s).rows },
    { kind: 'i32', value: L(s).cols },
    { kind: 'i32', value: L(s).accDx },
  ],
};

const ROWS_REG: CudaProgram = {
  ...ROWS,
  entry: 'tdm_lnb_rows_reg',
  defines: (_a, s) => ({ VEC: L(s).vec, ITERS: L(s).iters }),
};

const COLS: CudaProgram = {
  kind: 'program',
  source: SOURCE,
  entry: 'tdm_lnb_cols',
  dtypes,
  grid: (_a, s) => [Math.ceil(L(s).cols / 32), 1, 1],
  block: () => [256, 1, 1],
  params: (_a, s) => [
    { kind: 'addr', value: L(s).partial },
    { kind: 'ptr', arg: 6 },
    { kind: 'ptr', arg: 7 },
    { kind: 'i32', value: L(s).parts },
    { kind: 'i32', value: L(s).cols },
    { kind: 'i32', value: L(s).accumulate },
  ],
};

export const layernormBackwardCuda: CudaNative = {
  kind: 'native',
  run(ctx, args, scalars) {
    const op = 'layernorm_backward';
    const x = args[1]!.desc;
    const cols = x.shape[x.shape.length - 1]!;
    const rows = numel(x.shape) / cols;
    const acc = x.dtype === 'f64' ? 8 : 4;
    if (2 * cols * acc > SHARED_LIMIT) {
      throw new TandemError(
        'TANDEM_ERR_SHAPE',
        `${op}: the CUDA kernel keeps 2·C column sums in shared memory, so C ≤ ${SHARED_LIMIT / (2 * acc)} for ${x.dtype}; got C = ${cols}`,
        { op, cols },
      );
    }
    // Four blocks of 8 warps per SM (half occupancy: enough loads in flight for full bandwidth) and no
    // more, so the column pass sums at most 4·SMs partial rows.
    const parts = Math.max(1, Math.min(Math.ceil(rows / WARPS), 4 * ctx.smCount));
    const floats = [0, 1, 2, 5].map((i) => args[i]!);
    const vec = vectorWidth(x.dtype, cols, floats);
    const launch: LnbLaunch = {
      rows,
      cols,
      vec,
      iters: Math.ceil(cols / (32 * vec)),
      parts,
      partial: ctx.scratch(parts * 2 * cols * acc),
      accumulate: accumulateScalar(op, scalars) ? 1 : 0,
      accDx: accumulateScalar(op, scalars, 'accumulateDx') ? 1 : 0,
    };
    const s = launch as unknown as Scalars;
    ctx.launch(launch.iters * vec <= REG_COLS ? ROWS_REG : ROWS, args, s);
    ctx.launch(COLS, args, s);
  },
};
