/**
 * The CUDA programs of conv2d and conv2d_backward (im2col + cuBLAS GEMM + layout kernels). X is the
 * tensors' dtype; the column buffers and GEMM operands in scratch memory are X_c (float for
 * f32/f16/bf16, double for f64), so f16/bf16 compute in f32 and round once when stored.
 *
 * Layouts, for a chunk of `nb` images starting at image n0 (P = Ho·Wo, K = C·kh·kw):
 *   col [K, nb·P]   col[(c·kh + ki)·kw + kj][m·P + p] = x[n0 + m][c][i·s − pad + ki][j·s − pad + kj]
 *   yt  [O, nb·P]   = w[O, K] · col                (forward; then y[n0 + m][o][p] = yt[o][m·P + p] + b[o])
 *   dyt [O, nb·P]   dyt[o][m·P + p] = dy[n0 + m][o][p]
 *   dw  [O, K]     += dyt · colᵀ                   (f32/f64 accumulator in scratch)
 *   col [K, nb·P]   = wᵀ · dyt                      (then col2im gathers it into dx)
 * The programs are constants (the program cache is keyed by identity); per-launch values travel in
 * the scalars handed to ctx.launch (ConvLaunch).
 */
import type { Scalars } from '../../devices/device.js';
import type { CudaArgDesc, CudaParam, CudaProgram } from '../../devices/cuda/kernel-api.js';
import { BLOCK, BLOCK_DIM, elementwiseGrid } from '../common/cuda.js';
import type { ConvGeometry } from './geometry.js';

const GRID =
  'for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < total; t += (long long)gridDim.x * blockDim.x)';

const DIMS = 'int C, int H, int W, int KH, int KW, int S, int PAD, int HO, int WO';

const SOURCE = `
extern "C" __global__ void tdm_conv_im2col(const X_t* __restrict__ x, X_c* __restrict__ col, long long n0, int nb, ${DIMS}, long long total) {
  const long long P = (long long)HO * WO;
  const long long cols = nb * P;
  ${GRID} {
    const long long row = t / cols;
    const long long q = t - row * cols;
    const long long m = q / P;
    const int p = (int)(q - m * P);
    const int i = p / WO, j = p - (p / WO) * WO;
    const int c = (int)(row / (KH * KW));
    const int r = (int)(row - (long long)c * KH * KW);
    const int ki = r / KW, kj = r - (r / KW) * KW;
    const int h = i * S - PAD + ki, w = j * S - PAD + kj;
    X_c v = (X_c)0;
    if (h >= 0 && h < H && w >= 0 && w < W) v = ldX(x, (((n0 + m) * C + c) * H + h) * (long long)W + w);
    col[t] = v;
  }
}

// The same column buffer with one grid row (blockIdx.y) per buffer row (c, ki, kj), its tap worked out
// once per block, and 32-bit index arithmetic over the row's nb·P columns: the element-wise version's
// five 64-bit divisions per element made it the slowest part of a small convolution.
extern "C" __global__ void tdm_conv_im2col_rows(const X_t* __restrict__ x, X_c* __restrict__ col, long long n0, int nb, ${DIMS}) {
  const int P = HO * WO, cols = nb * P, row = blockIdx.y;
  const int c = row / (KH * KW), r = row - c * (KH * KW), ki = r / KW, kj = r - ki * KW;
  X_c* out = col + (long long)row * cols;
  const long long image = (long long)C * H * W;
  const long long base = n0 * image + (long long)c * H * W;
  for (int q = blockIdx.x * blockDim.x + threadIdx.x; q < cols; q += gridDim.x * blockDim.x) {
    const int m = q / P, p = q - m * P, i = p / WO, j = p - i * WO;
    const int h = i * S - PAD + ki, w = j * S - PAD + kj;
    X_c v = (X_c)0;
    if (h >= 0 && h < H && w >= 0 && w < W) v = ldX(x, base + m * image + h * W + w);
    out[q] = v;
  }
}

// gather_dy and conv_out with one grid row per channel o (32-bit arithmetic over nb·P columns).
extern "C" __global__ void tdm_conv_gather_dy_rows(const X_t* __restrict__ dy, X_c* __restrict__ dyt, long long n0, int nb, int O, int P) {
  const int cols = nb * P, o = blockIdx.y;
  X_c* out = dyt + (long long)o * cols;
  const long long base = (n0 * O + o) * (long long)P;
  for (int q = blockIdx.x * blockDim.x + threadIdx.x; q < cols; q += gridDim.x * blockDim.x) {
    const int m = q / P, p = q - m * P;
    out[q] = ldX(dy, base + (long long)m * O * P + p);
  }
}

extern "C" __global__ void tdm_conv_out_rows(const X_c* __restrict__ yt, const X_t* __restrict__ b, X_t* __restrict__ y, long long n0, int nb, int O, int P) {
  const int cols = nb * P, o = blockIdx.y;
  const X_c* in = yt + (long long)o * cols;
  const X_c bias = ldX(b, o);
  const long long base = (n0 * O + o) * (long long)P;
  for (int q = blockIdx.x * blockDim.x + threadIdx.x; q < cols; q += gridDim.x * blockDim.x) {
    const int m = q / P, p = q - m * P;
    stX(y, base + (long long)m * O * P + p, in[q] + bias);
  }
}

extern "C" __global__ void tdm_conv_to_compute(const X_t* __restrict__ src, X_c* __restrict__ dst, long long total) {
  ${GRID} dst[t] = ldX(src, t);
}

extern "C" __global__ void tdm_conv_out(const X_c* __restrict__ yt, const X_t* __restrict__ b, X_t* __restrict__ y, long long n0, int nb, int O, int P, long long total) {
  const long long cols = (long long)nb * P;
  ${GRID} {
    const long long m = t / ((long long)O * P);
    const long long r = t - m * O * P;
    const int o = (int)(r / P);
    const int p = (int)(r - (long long)o * P);
    stX(y, (n0 + m) * O * P + r, yt[o * cols + m * P + p] + ldX(b, o));
  }
}

extern "C" __global__ void tdm_conv_gather_dy(const X_t* __restrict__ dy, X_c* __restrict__ dyt, long long n0, int nb, int O, int P, long long total) {
  const long long cols = (long long)nb * P;
  ${GRID} {
    const long long m = t / ((long long)O * P);
    const long long r = t - m * O * P;
    const int o = (int)(r / P);
    const int p = (int)(r - (long long)o * P);
    dyt[o * cols + m * P + p] = ldX(dy, (n0 + m) * O * P + r);
  }
}

// dx[n0 + m][c][h][w] = Σ over the kernel taps (ki, kj) whose output position (i, j) exists.
extern "C" __global__ void tdm_conv_col2im(const X_c* __restrict__ col, X_t* __restrict__ dx, long long n0, int nb, ${DIMS}, long long total) {
  const long long P = (long long)HO * WO;
  const long long cols = nb * P;
  ${GRID} {
    const int w = (int)(t % W);
    const int h = (int)((t / W) % H);
    const int c = (int)((t / ((long long)W * H)) % C);
    const long long m = t / ((long long)W * H * C);
    X_c acc = (X_c)0;
    for (int ki = 0; ki < KH; ki++) {
      const int hi = h + PAD - ki;
      if (hi < 0 || hi % S != 0 || hi / S >= HO) continue;
      for (int kj = 0; kj < KW; kj++) {
        const int wj = w + PAD - kj;
        if (wj < 0 || wj % S != 0 || wj / S >= WO) continue;
        acc += col[((long long)(c * KH + ki) * KW + kj) * cols + m * P + (hi / S) * WO + wj / S];
      }
    }
    stX(dx, n0 * C * H * (long long)W + t, acc);
  }
}

// db in two deterministic passes: block (o, s) sums channel o over images s, s + S, ... (rows of P
// contiguous values, no division per element); then one thread per channel adds its S partials in order.
// (One block per channel was 32 or 64 blocks on a 132-SM GPU: the Fashion CNN's backward spent more time
// there than in its GEMMs.)
extern "C" __global__ void tdm_conv_db_part(const X_t* __restrict__ dy, X_c* __restrict__ part, int N, int O, int P) {
  __shared__ X_c partial[${BLOCK}];
  const int o = blockIdx.x, s = blockIdx.y, S = gridDim.y;
  X_c acc = (X_c)0;
  for (int n = s; n < N; n += S) {
    const long long row = ((long long)n * O + o) * P;
    for (int p = threadIdx.x; p < P; p += blockDim.x) acc += ldX(dy, row + p);
  }
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) partial[threadIdx.x] += partial[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) part[(long long)o * S + s] = partial[0];
}

extern "C" __global__ void tdm_conv_db_final(const X_c* __restrict__ part, X_t* __restrict__ db, int O, int S, int accumulate) {
  const int o = blockIdx.x * blockDim.x + threadIdx.x;
  if (o >= O) return;
  X_c sum = (X_c)0;
  for (int s = 0; s < S; s++) sum += part[(long long)o * S + s];
  stX(db, o, accumulate ? ldX(db, o) + sum : sum);
}

// dw (+)= the accumulator (have = 0: no image contributed, the gradient is 0).
extern "C" __global__ void tdm_conv_dw_store(const X_c* __restrict__ acc, X_t* __restrict__ dw, int accumulate, int have, long long total) {
  ${GRID} {
    const X_c g = have ? acc[t] : (X_c)0;
    stX(dw, t, accumulate ? ldX(dw, t) + g : g);
  }
}
`;

/** Per-launch values (scratch addresses, chunk, geometry) passed through ctx.launch's scalars. */
export interface ConvLaunch {
  readonly g: ConvGeometry;
  readonly n0: number;
  readonly nb: number;
  readonly total: number;
  /** Scratch addresses: source/destination buffers in compute type. */
  readonly a: number;
  readonly b: number;
  /** Tensor argument indices used by the program (into the native impl's args). */
  readonly x: number;
  readonly y: number;
  readonly bias: number;
  readonly accumulate: number;
  readonly have: number;
}

export function launchScalars(l: ConvLaunch): Scalars {
  return l as unknown as Scalars;
}
const L = (s: Scalars): ConvLaunch => s as unknown as ConvLaunch;

function dims(g: ConvGeometry): CudaParam[] {
  return [g.c, g.h, g.w, g.kh, g.kw, g.stride, g.padding, g.ho, g.wo].map((value) => ({
    kind: 'i32',
    value,
  }));
}

/** X binds to the first argument's dtype: every tensor of a conv call shares it. */
function program(
  entry: string,
  params: (l: ConvLaunch) => CudaParam[],
  grid?: (l: ConvLaunch) => readonly [number, number, number],
): CudaProgram {
  return {
    kind: 'program',
    source: SOURCE,
    entry,
    dtypes: (args: readonly CudaArgDesc[]) => ({ X: args[0]!.desc.dtype }),
    grid: (_a, s) => (grid ? grid(L(s)) : elementwiseGrid(L(s).total)),
    block: () => BLOCK_DIM,
    params: (_a, s) => params(L(s)),
  };
}

const i32 = (value: number): CudaParam => ({ kind: 'i32', value });
const i64 = (value: number): CudaParam => ({ kind: 'i64', value });
const addr = (value: number): CudaParam => ({ kind: 'addr', value });
const ptr = (arg: number): CudaParam => ({ kind: 'ptr', arg });

export const IM2COL = program('tdm_conv_im2col', (l) => [
  ptr(l.x),
  addr(l.a),
  i64(l.n0),
  i32(l.nb),
  ...dims(l.g),
  i64(l.total),
]);
/** Grid of the *_ROWS programs: `l.total` grid rows (see rowsFit) of blocks over the chunk's nb·P columns. */
const rowsGrid = (l: ConvLaunch): readonly [number, number, number] => [
  Math.max(1, Math.min(Math.ceil((l.nb * l.g.ho * l.g.wo) / BLOCK), 1024)),
  l.total,
  1,
];
/** Rows and columns the *_ROWS programs take (grid y, 32-bit column indices); others use the 1-D ones. */
export function rowsFit(rows: number, cols: number): boolean {
  return rows >= 1 && rows <= 65_535 && cols < 2 ** 31;
}
export const IM2COL_ROWS = program(
  'tdm_conv_im2col_rows',
  (l) => [ptr(l.x), addr(l.a), i64(l.n0), i32(l.nb), ...dims(l.g)],
  rowsGrid,
);
export const GATHER_DY_ROWS = program(
  'tdm_conv_gather_dy_rows',
  (l) => [ptr(l.x), addr(l.a), i64(l.n0), i32(l.nb), i32(l.g.o), i32(l.g.ho * l.g.wo)],
  rowsGrid,
);
export const CONV_OUT_ROWS = program(
  'tdm_conv_out_rows',
  (l) => [addr(l.a), ptr(l.bias), ptr(l.y), i64(l.n0), i32(l.nb), i32(l.g.o), i32(l.g.ho * l.g.wo)],
  rowsGrid,
);
export const TO_COMPUTE = program('tdm_conv_to_compute', (l) => [ptr(l.x), addr(l.a), i64(l.total)]);
export const CONV_OUT = program('tdm_conv_out', (l) => [
  addr(l.a),
  ptr(l.bias),
  ptr(l.y),
  i64(l.n0),
  i32(l.nb),
  i32(l.g.o),
  i32(l.g.ho * l.g.wo),
  i64(l.total),
]);
export const GATHER_DY = program('tdm_conv_gather_dy', (l) => [
  ptr(l.x),
  addr(l.a),
  i64(l.n0),
  i32(l.nb),
  i32(l.g.o),
  i32(l.g.ho * l.g.wo),
  i64(l.total),
]);
export const COL2IM = program('tdm_conv_col2im', (l) => [
  addr(l.a),
  ptr(l.y),
  i64(l.n0),
  i32(l.nb),
  ...dims(l.g),
  i64(l.total),
]);
/** Image groups the bias gradient is split over (DB_PART's grid y): enough blocks to fill the GPU. */
export function dbParts(n: number): number {
  return Math.max(1, Math.min(n, 64));
}
/** Partial sums of dy per (channel, image group) into scratch `a`; `nb` carries the group count. */
export const DB_PART = program(
  'tdm_conv_db_part',
  (l) => [ptr(l.x), addr(l.a), i32(l.g.n), i32(l.g.o), i32(l.g.ho * l.g.wo)],
  (l) => [l.g.o, l.nb, 1],
);
/** db (+)= the sum of each channel's partials. */
export const DB_FINAL = program('tdm_conv_db_final', (l) => [
  addr(l.a),
  ptr(l.y),
  i32(l.g.o),
  i32(l.nb),
  i32(l.accumulate),
]);
export const DW_STORE = program('tdm_conv_dw_store', (l) => [
  addr(l.a),
  ptr(l.y),
  i32(l.accumulate),
  i32(l.have),
  i64(l.total),
]);

/**
 * The GEMMs' precision: TF32 tensor cores for f16/bf16 tensors — their values (converted to f32 in the
 * column buffers) have at most 10 mantissa bits and fit TF32 exactly, so the products are the f32
 * GEMM's and only the f32 accumulation order differs; full f32 (f64) for f32 (f64) tensors.
 */
export function gemmPrecision(dtype: string): 'tf32' | 'default' {
  return dtype === 'f16' || dtype === 'bf16' ? 'tf32' : 'default';
}

/** Column buffers are kept under this size: larger batches run in chunks of images. */
export const COLUMN_BYTES = 256 * 2 ** 20;

/** Images per chunk so that a [C·kh·kw, nb·P] (and an [O, nb·P]) compute-type buffer fits the budget. */
export function imagesPerChunk(g: ConvGeometry, computeBytes: number, budget = COLUMN_BYTES): number {
  const perImage = Math.max(g.c * g.kh * g.kw, g.o) * g.ho * g.wo * computeBytes;
  return Math.max(1, Math.min(g.n, Math.floor(budget / Math.max(perImage, 1))));
}
