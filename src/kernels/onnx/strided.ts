/**
 * The strided copy behind onnx_transpose, onnx_slice, onnx_expand and onnx_concat: over an iteration
 * shape (rank ≤ 6), dst[dstBase + Σ c·dstStride] = src[srcBase + Σ c·srcStride]. Strides may be 0
 * (broadcast) or negative (a reversed slice). Elements are copied as stored, so every dtype works and
 * 16-bit floats are never converted. Each op only describes its plan.
 */
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import type { CudaParam, CudaProgram } from '../../devices/cuda/kernel-api.js';
import type { Scalars, TensorDesc } from '../../devices/device.js';
import { numel } from '../../core/shape.js';
import { BLOCK_DIM, GRID_STRIDE, elementwiseGrid } from '../common/cuda.js';
import { CUDA_INDEX, forEachRow, i64Params, idx32, pad6 } from './common.js';

export interface StridedPlan {
  readonly shape: readonly number[];
  readonly srcStrides: readonly number[];
  readonly srcBase: number;
  readonly dstStrides: readonly number[];
  readonly dstBase: number;
}

/** Builds the plan from the op's two tensors (source first, destination second) and scalars. */
export type PlanFn = (src: TensorDesc, dst: TensorDesc, scalars: Scalars) => StridedPlan;

export function stridedCpu(plan: PlanFn): CpuKernel {
  return (args, scalars) => {
    const [src, dst] = args as [CpuArg, CpuArg];
    copy(plan(src.desc, dst.desc, scalars), src.data, dst.data);
  };
}

export function copy(p: StridedPlan, from: ArrayLike<number>, to: { [i: number]: number }): void {
  const rank = p.shape.length;
  const inner = rank === 0 ? 1 : p.shape[rank - 1]!;
  const ss = rank === 0 ? 0 : p.srcStrides[rank - 1]!;
  const ds = rank === 0 ? 0 : p.dstStrides[rank - 1]!;
  forEachRow(p.shape, [p.srcStrides, p.dstStrides], [p.srcBase, p.dstBase], ([s, d]) => {
    for (let j = 0; j < inner; j++) to[d! + j * ds] = from[s! + j * ss]!;
  });
}

export function stridedCuda(plan: PlanFn): CudaProgram {
  return {
    kind: 'program',
    entry: 'tdm_onnx_strided',
    source: `${CUDA_INDEX}
extern "C" __global__ void tdm_onnx_strided(const X_t* __restrict__ src, X_t* __restrict__ dst, long long n,
    long long sbase, long long dbase, DIMS6(d), DIMS6(ss), DIMS6(ds)) {
  const long long dims[6] = ARR6(d), sst[6] = ARR6(ss), dst_[6] = ARR6(ds);
  ${GRID_STRIDE} dst[dbase + offset6(i, dims, dst_)] = src[sbase + offset6(i, dims, sst)];
}`,
    dtypes: (args) => ({ X: args[0]!.desc.dtype }),
    defines: (args, scalars) => ({ IDX32: idx32(numel(plan(args[0]!.desc, args[1]!.desc, scalars).shape)) }),
    grid: (args, scalars) => elementwiseGrid(numel(plan(args[0]!.desc, args[1]!.desc, scalars).shape)),
    block: () => BLOCK_DIM,
    params: (args, scalars): CudaParam[] => {
      const p = plan(args[0]!.desc, args[1]!.desc, scalars);
      const s = pad6(p.shape, p.srcStrides);
      return [
        { kind: 'ptr', arg: 0 },
        { kind: 'ptr', arg: 1 },
        { kind: 'i64', value: numel(p.shape) },
        { kind: 'i64', value: p.srcBase },
        { kind: 'i64', value: p.dstBase },
        ...i64Params(s.dims),
        ...i64Params(s.strides),
        ...i64Params(pad6(p.shape, p.dstStrides).strides),
      ];
    },
  };
}
