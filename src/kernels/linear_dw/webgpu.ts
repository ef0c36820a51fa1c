/** WGSL linear_dw: the gemm WGSL computes dyᵀ·x (beta = 1 to accumulate), a column-sum step gives db. */
import type { TensorDesc } from '../../devices/device.js';
import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
import { floatStorage } from '../common/webgpu.js';
import { columnSumStep, gemmSteps, linearSupports } from '../linear/webgpu.js';
import { accumulateOf } from './def.js';

export const linearDwWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args, _s, f) => args.length === 4 && linearSupports(args, f),
  plan(args, scalars, f) {
    const accumulate = accumulateOf('linear_dw', scalars);
    const [dy, x, dw] = args as [TensorDesc, TensorDesc, TensorDesc, TensorDesc];
    const [m, n] = dy.shape as [number, number];
    const k = x.shape[1]!;
    if (n === 0) return [];
    const storage = floatStorage(dy.dtype, f)!;
    const gemm =
      k === 0 ? [] : gemmSteps(dy, x, dw, { transA: true, beta: accumulate ? 1 : 0 }, f, [0, 1, 2]);
    return [...gemm, columnSumStep(storage, m, n, accumulate, [0, 3])];
  },
};
