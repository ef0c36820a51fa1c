/** WGSL axpy: y = alpha * x + y, f32 arithmetic, f16 storage native or packed (common/webgpu.ts). */
import { numel } from '../../core/shape.js';
import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
import { type FloatStorage, elementwiseStep, elementwiseWgsl, floatStorage } from '../common/webgpu.js';
import { numberScalar } from '../common/scalars.js';

export function axpyWgsl(storage: FloatStorage): string {
  return elementwiseWgsl(storage, {
    tensors: [{ name: 'X' }, { name: 'Y', write: true }],
    inputs: ['X', 'Y'],
    output: 'Y',
    expr: 'fma(P.alpha, x, y)',
    params: ['alpha: f32'],
  });
}

export const axpyWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args, _s, f) =>
    args.length === 2 && args[0]!.dtype === args[1]!.dtype && floatStorage(args[0]!.dtype, f) !== undefined,
  plan(args, scalars, f) {
    const storage = floatStorage(args[0]!.dtype, f)!;
    const alpha = numberScalar('axpy', scalars, 'alpha', 1);
    return [
      elementwiseStep(
        storage,
        axpyWgsl(storage),
        numel(args[0]!.shape),
        [0, 1],
        [{ type: 'f32', value: alpha }],
      ),
    ];
  },
};
