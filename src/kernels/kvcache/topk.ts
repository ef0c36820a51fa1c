/**
 * topk_rows: the k largest entries of each row among its first `vocab` columns (the real vocabulary of
 * a padded LM head), largest first, ties to the lower index, NaN never chosen; a row with fewer than k
 * numbers pads with index −1 and value NaN. k = 1 is greedy decoding's argmax: only R·k numbers come
 * back to the host instead of R·V logits.
 *
 * CUDA: one block per row, k passes; pass j takes the block's maximum among the entries that come after
 * pick j−1 in the order (value descending, index ascending), so no list of picks is kept.
 */
import { bytesPerElement } from '../../core/dtype.js';
import { TandemError } from '../../core/errors.js';
import { numel } from '../../core/shape.js';
import type { Scalars, TensorDesc } from '../../devices/device.js';
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import type { CudaProgram } from '../../devices/cuda/kernel-api.js';
import type { KernelDef } from '../kernel.js';
import type { ReferenceFn } from '../common/reference.js';
import { checkScalarNames, intScalar } from '../common/scalars.js';
import { checkArgNames, requireFloat, requireRank } from '../common/validate.js';
import { type FloatArray, decodeHalf, isHalf } from '../common/cpu-float.js';
import { expectDType, expectShape } from './params.js';

function topkDims(x: TensorDesc, scalars: Scalars): { rows: number; cols: number; vocab: number } {
  const [rows, cols] = x.shape as [number, number];
  const vocab = intScalar('topk_rows', scalars, 'vocab', cols);
  if (vocab < 1 || vocab > cols)
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `topk_rows: vocab must be in [1, ${cols}], got ${vocab}`,
      {
        op: 'topk_rows',
        scalar: 'vocab',
      },
    );
  return { rows, cols, vocab };
}

export const topkRowsDef: KernelDef = {
  name: 'topk_rows',
  args: [
    { name: 'x', mode: 'r' },
    { name: 'values', mode: 'w' },
    { name: 'indices', mode: 'w' },
  ],
  validate(args, scalars) {
    checkArgNames('topk_rows', topkRowsDef.args, args);
    checkScalarNames('topk_rows', scalars, ['vocab']);
    requireFloat('topk_rows', 'x', args.x!);
    requireRank('topk_rows', 'x', args.x!, 2);
    const { rows } = topkDims(args.x!, scalars);
    requireRank('topk_rows', 'values', args.values!, 2);
    const k = args.values!.shape[1]!;
    if (k < 1 || k > 1024)
      throw new TandemError(
        'TANDEM_ERR_SHAPE',
        `topk_rows: k (values' columns) must be in [1, 1024], got ${k}`,
        {
          op: 'topk_rows',
        },
      );
    expectShape('topk_rows', 'values', args.values!, [rows, k]);
    expectDType('topk_rows', 'values', args.values!, 'f32');
    expectShape('topk_rows', 'indices', args.indices!, [rows, k]);
    expectDType('topk_rows', 'indices', args.indices!, 'i32');
  },
  cost(args) {
    const k = args.values!.shape[1]!;
    return { flops: k * numel(args.x!.shape), bytes: numel(args.x!.shape) * bytesPerElement(args.x!.dtype) };
  },
};

/** The picks of one row, in order. */
function pickRow(row: ArrayLike<number>, vocab: number, k: number): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (let i = 0; i < vocab; i++) {
    const v = row[i]!;
    if (Number.isNaN(v)) continue;
    if (out.length === k && v <= out[k - 1]![1]) continue;
    let j = out.length < k ? out.length : k - 1;
    if (out.length < k) out.push([i, v]);
    while (j > 0 && out[j - 1]![1] < v) {
      out[j] = out[j - 1]!;
      j--;
    }
    out[j] = [i, v];
  }
  return out;
}

export const topkRowsReference: ReferenceFn = (args, scalars) => {
  const { rows, cols, vocab } = topkDims(args.x!.desc, scalars);
  const k = args.values!.desc.shape[1]!;
  const values = new Float64Array(rows * k).fill(NaN);
  const indices = new Float64Array(rows * k).fill(-1);
  const x = args.x!.values;
  for (let r = 0; r < rows; r++) {
    // Sorting all entries is the plainest statement of the order.
    const all = Array.from(x.subarray(r * cols, r * cols + vocab), (v, i): [number, number] => [i, v])
      .filter(([, v]) => !Number.isNaN(v))
      .sort((a, b) => b[1] - a[1] || a[0] - b[0]);
    all.slice(0, k).forEach(([i, v], j) => {
      indices[r * k + j] = i;
      values[r * k + j] = Math.fround(v);
    });
  }
  return { values, indices };
};

export const topkRowsCpu: CpuKernel = (args, scalars) => {
  const [x, valuesA, indicesA] = args as [CpuArg, CpuArg, CpuArg];
  const { rows, cols, vocab } = topkDims(x.desc, scalars);
  const k = valuesA.desc.shape[1]!;
  const values = valuesA.data as Float32Array;
  const indices = indicesA.data as Int32Array;
  const row: FloatArray = x.desc.dtype === 'f64' ? new Float64Array(vocab) : new Float32Array(vocab);
  for (let r = 0; r < rows; r++) {
    if (isHalf(x.desc.dtype))
      decodeHalf(
        x.desc.dtype,
        (x.data as Uint16Array).subarray(r * cols, r * cols + vocab),
        row as Float32Array,
      );
    else row.set((x.data as FloatArray).subarray(r * cols, r * cols + vocab));
    const picks = pickRow(row, vocab, k);
    for (let j = 0; j < k; j++) {
      indices[r * k + j] = picks[j]?.[0] ?? -1;
      values[r * k + j] = picks[j]?.[1] ?? NaN;
    }
  }
};

const THREADS = 256;

const SOURCE = `
// (v, i) comes before (w, j): larger value first, then lower index.
static __device__ __forceinline__ bool tk_before(X_c v, int i, X_c w, int j) {
  return j < 0 || v > w || (v == w && i < j);
}
extern "C" __global__ void tdm_topk_rows(const X_t* __restrict__ x, float* __restrict__ values,
    int* __restrict__ indices, int cols, int vocab, int k) {
  __shared__ X_c sv[${THREADS}];
  __shared__ int si[${THREADS}];
  const long long row = blockIdx.x;
  const X_t* xr = x + row * cols;
  const int tid = threadIdx.x;
  X_c prevV = 0;
  int prevI = -1;
  for (int j = 0; j < k; j++) {
    X_c bv = 0;
    int bi = -1;
    for (int i = tid; i < vocab; i += blockDim.x) {
      const X_c v = ldX(xr, i);
      if (v != v) continue;
      // Only entries after the previous pick, in the order.
      if (prevI >= 0 && !tk_before(prevV, prevI, v, i)) continue;
      if (tk_before(v, i, bv, bi)) { bv = v; bi = i; }
    }
    sv[tid] = bv;
    si[tid] = bi;
    __syncthreads();
    for (int o = blockDim.x >> 1; o > 0; o >>= 1) {
      if (tid < o && si[tid + o] >= 0 && tk_before(sv[tid + o], si[tid + o], sv[tid], si[tid])) {
        sv[tid] = sv[tid + o];
        si[tid] = si[tid + o];
      }
      __syncthreads();
    }
    const X_c pv = sv[0];
    const int pi = si[0];
    __syncthreads();
    if (tid == 0) {
      // No number left: this and every later pick is empty (the same decision in every thread).
      for (int r = j; r < (pi >= 0 ? j + 1 : k); r++) {
        values[row * k + r] = pi >= 0 ? (float)pv : __int_as_float(0x7fc00000);
        indices[row * k + r] = pi;
      }
    }
    if (pi < 0) break;
    prevV = pv;
    prevI = pi;
  }
}`;

export const topkRowsCuda: CudaProgram = {
  kind: 'program',
  source: SOURCE,
  entry: 'tdm_topk_rows',
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  grid: (args) => [args[0]!.desc.shape[0]!, 1, 1],
  block: () => [THREADS, 1, 1],
  params: (args, scalars) => {
    const { cols, vocab } = topkDims(args[0]!.desc, scalars);
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      { kind: 'ptr', arg: 2 },
      { kind: 'i32', value: cols },
      { kind: 'i32', value: vocab },
      { kind: 'i32', value: args[1]!.desc.shape[1]! },
    ];
  },
};
