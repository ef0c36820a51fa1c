/**
 * Pieces every ONNX kernel shares: the definition builder (argument and scalar names checked once),
 * dtype sets, tolerances, the N-d strided walk of the CPU kernels and the rank-6 index parameters of
 * the CUDA programs.
 */
import { type DType, epsilon, bytesPerElement, isFloat } from '../../core/dtype.js';
import { TandemError } from '../../core/errors.js';
import { numel } from '../../core/shape.js';
import type { Scalars, TensorDesc } from '../../devices/device.js';
import type { CudaParam } from '../../devices/cuda/kernel-api.js';
import { checkScalarNames } from '../common/scalars.js';
import { checkArgNames } from '../common/validate.js';
import type { ConformanceCase } from '../case-types.js';
import type { ReferenceFn } from '../common/reference.js';
import type { AccessMode, Cost, KernelDef, KernelImplEntry } from '../kernel.js';
import { MAX_RANK } from './shapes.js';

export type ArgDescs = Readonly<Record<string, TensorDesc>>;

export const FLOAT_DTYPES: readonly DType[] = ['f32', 'f64', 'f16', 'bf16'];
/** Data-movement ops copy elements of any of these. */
export const COPY_DTYPES: readonly DType[] = ['f32', 'f64', 'f16', 'bf16', 'i32', 'u8'];

/** A kernel definition whose argument and scalar names are checked before `check` runs. */
export function onnxDef(
  name: string,
  args: readonly (readonly [string, AccessMode])[],
  scalarNames: readonly string[],
  check: (args: ArgDescs, scalars: Scalars) => void,
  cost: (args: ArgDescs, scalars: Scalars) => Cost,
): KernelDef {
  const specs = args.map(([n, mode]) => ({ name: n, mode }));
  return {
    name,
    args: specs,
    validate(descs, scalars) {
      checkArgNames(name, specs, descs);
      checkScalarNames(name, scalars, scalarNames);
      check(descs, scalars);
    },
    cost,
  };
}

/** Every named argument has one of `dtypes`, and all of them the same one. */
export function requireDTypes(
  op: string,
  args: ArgDescs,
  names: readonly string[],
  dtypes: readonly DType[],
) {
  const first = args[names[0]!]!.dtype;
  for (const n of names) {
    const d = args[n]!.dtype;
    if (!dtypes.includes(d) || d !== first) {
      throw new TandemError(
        'TANDEM_ERR_DTYPE',
        `${op}: ${names.join(', ')} must share one dtype of ${dtypes.join(', ')}; ${n} is ${d}`,
        { op, arg: n },
      );
    }
  }
}

/** Bytes of reading every input once and writing every output once. */
/** What an out-of-range gather index reads: NaN for floats, 0 for integers. */
export function missingValue(dtype: DType): number {
  return isFloat(dtype) ? NaN : 0;
}

export function streamCost(args: ArgDescs, flopsPerOutput = 1, output = 'y'): Cost {
  let bytes = 0;
  for (const d of Object.values(args)) bytes += numel(d.shape) * bytesPerElement(d.dtype);
  return { flops: flopsPerOutput * numel(args[output]!.shape), bytes };
}

/** Arithmetic precision of a dtype's kernels: 16-bit floats compute in f32. */
export function workEps(dtype: DType): number {
  return dtype === 'f64' ? epsilon('f64') : epsilon('f32');
}

/** One rounding to the dtype on store after `ops` roundings in the working precision. */
export function elementTolerance(dtype: DType, ops = 4): { rtol: number; atol: number } {
  return { rtol: epsilon(dtype) + ops * workEps(dtype), atol: ops * workEps(dtype) };
}

/** A sum of `terms` products of inputs ≤ 1 in magnitude, rounded once to `dtype` (as gemm's cases). */
export function sumTolerance(dtype: DType, terms: number): { rtol: number; atol: number } {
  return { rtol: 2 * epsilon(dtype), atol: 4 * terms * workEps(dtype) };
}

/** Pads a shape and its strides to rank 6 (leading 1s and 0s). */
export function pad6(
  shape: readonly number[],
  strides: readonly number[],
): { dims: number[]; strides: number[] } {
  const lead = MAX_RANK - shape.length;
  return {
    dims: [...new Array<number>(lead).fill(1), ...shape],
    strides: [...new Array<number>(lead).fill(0), ...strides],
  };
}

/** i64 kernel parameters, in order. */
export function i64Params(values: readonly number[]): CudaParam[] {
  return values.map((value) => ({ kind: 'i64', value }));
}

/**
 * CUDA source: `store_miss(y, i)` writes what a gather reads for an index out of range (`missingValue`:
 * NaN for floats, 0 for integers); the program defines IS_FLOAT.
 */
export const CUDA_STORE_MISS = `
static __device__ __forceinline__ void store_miss(X_t* y, long long i) {
#if IS_FLOAT
  stX(y, i, (X_c)(0.0 / 0.0));
#else
  y[i] = (X_t)0;
#endif
}
`;

/**
 * CUDA source: `DIMS6(d)` declares six i64 parameters d0..d5; `offset6(i, d, s)` turns a row-major
 * index over dims d into Σ coordinate·stride (strides may be 0 or negative). Axes of size 1 (the padding
 * to rank 6) are skipped, and with the define IDX32 (every index < 2³¹, see `idx32`) the divisions are
 * 32-bit: 64-bit integer division is a long software sequence on the GPU.
 */
export const CUDA_INDEX = `
#define DIMS6(p) long long p##0, long long p##1, long long p##2, long long p##3, long long p##4, long long p##5
#define ARR6(p) { p##0, p##1, p##2, p##3, p##4, p##5 }
#if IDX32
typedef unsigned int tdm_idx;
#else
typedef long long tdm_idx;
#endif
static __device__ __forceinline__ long long offset6(long long i, const long long* d, const long long* s) {
  tdm_idx r = (tdm_idx)i;
  long long off = 0;
  for (int k = 5; k >= 0; --k) {
    tdm_idx dk = (tdm_idx)d[k];
    if (dk == 1) continue;
    tdm_idx c = r % dk;
    r /= dk;
    off += (long long)c * s[k];
  }
  return off;
}
`;

/** The IDX32 define for CUDA_INDEX: 1 when every index of an `elements`-sized space fits 31 bits. */
export function idx32(elements: number): number {
  return elements < 2 ** 31 ? 1 : 0;
}

/**
 * Walks a rank-r index space row by row: for each position of the leading r−1 axes `body` gets the
 * offset of that row's first element in each strided operand; the caller loops the last axis itself
 * (its length and strides are `shape[r−1]` and `strides[k][r−1]`). Rank 0 is one row of length 1.
 */
export function forEachRow(
  shape: readonly number[],
  strides: readonly (readonly number[])[],
  bases: readonly number[],
  body: (offsets: readonly number[], rowIndex: number) => void,
): void {
  const rank = shape.length;
  if (shape.some((d) => d === 0)) return;
  const offsets = [...bases];
  if (rank <= 1) {
    body(offsets, 0);
    return;
  }
  const outer = rank - 1;
  const coord = new Array<number>(outer).fill(0);
  const rows = numel(shape.slice(0, outer));
  for (let row = 0; row < rows; row++) {
    body(offsets, row);
    for (let axis = outer - 1; axis >= 0; axis--) {
      coord[axis]!++;
      for (let k = 0; k < offsets.length; k++) offsets[k]! += strides[k]![axis]!;
      if (coord[axis]! < shape[axis]!) break;
      for (let k = 0; k < offsets.length; k++) offsets[k]! -= strides[k]![axis]! * shape[axis]!;
      coord[axis] = 0;
    }
  }
}

/**
 * An op group as src/kernels/nn/op-group.ts defines it (the flat tables take it through ONNX_GROUPS);
 * restated here because the layering lint reads any `../nn/` import as one of the nn layer.
 */
export interface OnnxOpGroup {
  readonly name: string;
  readonly defs: readonly KernelDef[];
  readonly impls: readonly KernelImplEntry[];
  readonly references: Readonly<Record<string, ReferenceFn>>;
  cases(): ConformanceCase[];
}

/**
 * CUDA source: block-wide sum and NaN-propagating max over 256 threads through shared memory `sh`
 * (256 elements of T). Every thread gets the result; each call ends with a barrier so `sh` can be reused.
 */
export const CUDA_BLOCK_REDUCE = `
template <typename T> static __device__ T block_sum(T v, T* sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  T r = sh[0];
  __syncthreads();
  return r;
}
template <typename T> static __device__ T block_max(T v, T* sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      T a = sh[threadIdx.x], b = sh[threadIdx.x + s];
      sh[threadIdx.x] = (a != a || b != b) ? a + b : (a > b ? a : b);
    }
    __syncthreads();
  }
  T r = sh[0];
  __syncthreads();
  return r;
}
`;
