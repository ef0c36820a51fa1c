/** WGSL linear_dx_act: the gemm WGSL computes dy·w into dx, then dx = act′(pre)·dx in place. */
import type { TensorDesc } from '../../devices/device.js';
import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
import { floatStorage } from '../common/webgpu.js';
import { enumScalar } from '../common/scalars.js';
import { ACT_OPS } from '../activation/ops.js';
import { actGradInPlaceStep } from '../activation_backward/webgpu.js';
import { gemmSteps, linearSupports } from '../linear/webgpu.js';

export const linearDxActWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args, _s, f) => args.length === 4 && linearSupports(args, f),
  plan(args, scalars, f) {
    const act = enumScalar('linear_dx_act', scalars, 'act', ACT_OPS);
    const [dy, w, , dx] = args as [TensorDesc, TensorDesc, TensorDesc, TensorDesc];
    const [m, k] = dx.shape as [number, number];
    if (m === 0 || k === 0) return [];
    const storage = floatStorage(dy.dtype, f)!;
    return [
      ...gemmSteps(dy, w, dx, { beta: 0 }, f, [0, 1, 3]),
      actGradInPlaceStep(storage, act, m * k, [2, 3]),
    ];
  },
};
