/**
 * onnx_det: ONNX Det, the determinant of each [n, n] matrix of x [..., n, n] into y [...]. Definition,
 * float64 reference (the Leibniz sum over permutations for n ≤ 6, independent of the kernels' method),
 * CPU and CUDA: Gaussian elimination with partial pivoting in double, one matrix per CUDA thread with
 * the matrix in registers / local memory (n ≤ 32), rounded once to the dtype.
 */
import { TandemError } from '../../core/errors.js';
import { numel } from '../../core/shape.js';
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import type { CudaParam, CudaProgram } from '../../devices/cuda/kernel-api.js';
import type { TensorDesc } from '../../devices/device.js';
import { type FloatArray, floatCopyOf, isHalf, storeFloat } from '../common/cpu-float.js';
import { BLOCK_DIM, GRID_STRIDE, elementwiseGrid } from '../common/cuda.js';
import type { ReferenceFn } from '../common/reference.js';
import { FLOAT_DTYPES, i64Params, onnxDef, requireDTypes, streamCost } from './common.js';
import { requireRank, requireShape } from './shapes.js';

/** Largest matrix side: a CUDA thread holds the matrix (n² doubles) in local memory. */
export const MAX_DET_N = 32;

export function detGeometry(x: Pick<TensorDesc, 'shape'>): { batch: number; n: number; out: number[] } {
  const op = 'onnx_det';
  requireRank(op, 'x', x.shape, 2);
  const n = x.shape[x.shape.length - 1]!;
  if (x.shape[x.shape.length - 2] !== n || n > MAX_DET_N)
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `${op}: x [${x.shape.join(',')}] must end in a square [n, n] with n ≤ ${MAX_DET_N}`,
      { op },
    );
  const out = x.shape.slice(0, -2);
  return { batch: numel(out), n, out };
}

export const onnxDetDef = onnxDef(
  'onnx_det',
  [
    ['x', 'r'],
    ['y', 'w'],
  ],
  [],
  (args) => {
    requireDTypes('onnx_det', args, ['x', 'y'], FLOAT_DTYPES);
    requireShape('onnx_det', 'y', args.y!.shape, detGeometry(args.x!).out);
  },
  (args) => streamCost(args, 8),
);

/** det by elimination with partial pivoting, in double. */
function eliminate(a: Float64Array, n: number): number {
  let det = 1;
  for (let c = 0; c < n; c++) {
    let p = c;
    let best = Math.abs(a[c * n + c]!);
    for (let r = c + 1; r < n; r++) {
      const v = Math.abs(a[r * n + c]!);
      if (v > best) [best, p] = [v, r];
    }
    if (best === 0) return 0;
    if (p !== c) {
      for (let k = 0; k < n; k++) [a[c * n + k], a[p * n + k]] = [a[p * n + k]!, a[c * n + k]!];
      det = -det;
    }
    const piv = a[c * n + c]!;
    det *= piv;
    for (let r = c + 1; r < n; r++) {
      const f = a[r * n + c]! / piv;
      for (let k = c + 1; k < n; k++) a[r * n + k]! -= f * a[c * n + k]!;
    }
  }
  return det;
}

/** Σ over permutations σ of sign(σ)·Π a[i, σ(i)] (Heap's algorithm). */
function leibniz(a: ArrayLike<number>, off: number, n: number): number {
  const perm = Array.from({ length: n }, (_, i) => i);
  const c = new Array<number>(n).fill(0);
  let sign = 1;
  const term = () => perm.reduce((p, j, i) => p * a[off + i * n + j]!, sign);
  let sum = term();
  for (let i = 1; i < n;) {
    if (c[i]! < i) {
      const j = i % 2 === 0 ? 0 : c[i]!;
      [perm[j], perm[i]] = [perm[i]!, perm[j]!];
      sign = -sign;
      sum += term();
      c[i]!++;
      i = 1;
    } else c[i++] = 0;
  }
  return sum;
}

export const onnxDetReference: ReferenceFn = (args) => {
  const { batch, n } = detGeometry(args.x!.desc);
  const x = args.x!.values;
  const y = new Float64Array(batch);
  for (let b = 0; b < batch; b++)
    y[b] =
      n <= 6
        ? leibniz(x, b * n * n, n)
        : eliminate(Float64Array.from(x.slice(b * n * n, (b + 1) * n * n)), n);
  return { y };
};

export const onnxDetCpu: CpuKernel = (args) => {
  const [x, y] = args as [CpuArg, CpuArg];
  const { batch, n } = detGeometry(x.desc);
  const xf = floatCopyOf(x);
  const yf = isHalf(y.desc.dtype) ? new Float32Array(batch) : (y.data as FloatArray);
  for (let b = 0; b < batch; b++)
    yf[b] = eliminate(Float64Array.from(xf.subarray(b * n * n, (b + 1) * n * n)), n);
  storeFloat(y, yf);
};

export const onnxDetCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_det',
  source: `
extern "C" __global__ void tdm_onnx_det(const X_t* __restrict__ x, X_t* __restrict__ y, long long n) {
  ${GRID_STRIDE} {
    double a[N * N];
    for (int k = 0; k < N * N; k++) a[k] = (double)ldX(x, i * N * N + k);
    double det = 1;
    for (int c = 0; c < N; c++) {
      int p = c;
      double best = fabs(a[c * N + c]);
      for (int r = c + 1; r < N; r++) {
        const double v = fabs(a[r * N + c]);
        if (v > best) { best = v; p = r; }
      }
      if (best == 0) { det = 0; break; }
      if (p != c) {
        for (int k = 0; k < N; k++) { const double t = a[c * N + k]; a[c * N + k] = a[p * N + k]; a[p * N + k] = t; }
        det = -det;
      }
      const double piv = a[c * N + c];
      det *= piv;
      for (int r = c + 1; r < N; r++) {
        const double f = a[r * N + c] / piv;
        for (int k = c + 1; k < N; k++) a[r * N + k] -= f * a[c * N + k];
      }
    }
    stX(y, i, (X_c)det);
  }
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  defines: (args) => ({ N: detGeometry(args[0]!.desc).n }),
  grid: (args) => elementwiseGrid(detGeometry(args[0]!.desc).batch),
  block: () => BLOCK_DIM,
  params: (args): CudaParam[] => [
    { kind: 'ptr', arg: 0 },
    { kind: 'ptr', arg: 1 },
    ...i64Params([detGeometry(args[0]!.desc).batch]),
  ],
};
