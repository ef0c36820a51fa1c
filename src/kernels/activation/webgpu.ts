/** WGSL activation: y = op(x), f32 arithmetic, every float storage the element-wise generator has. */
import { numel } from '../../core/shape.js';
import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
import { elementwiseStep, elementwiseWgsl, floatStorage } from '../common/webgpu.js';
import { enumScalar } from '../common/scalars.js';
import { ACT_OPS } from './ops.js';
import { ACT_WGSL, actExpr } from './webgpu-source.js';

export const activationWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args, _s, f) =>
    args.length === 2 && args[0]!.dtype === args[1]!.dtype && floatStorage(args[0]!.dtype, f) !== undefined,
  plan(args, scalars, f) {
    const storage = floatStorage(args[0]!.dtype, f)!;
    const op = enumScalar('activation', scalars, 'op', ACT_OPS);
    const wgsl = elementwiseWgsl(storage, {
      tensors: [{ name: 'X' }, { name: 'Y', write: true }],
      inputs: ['X'],
      output: 'Y',
      expr: actExpr(op, 'x'),
      helpers: ACT_WGSL,
    });
    return [elementwiseStep(storage, wgsl, numel(args[0]!.shape), [0, 1])];
  },
};
