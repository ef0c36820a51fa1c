/** WGSL scale: x = alpha * x in place, f32 arithmetic, f16 storage native or packed (common/webgpu.ts). */
import { numel } from '../../core/shape.js';
import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
import { type FloatStorage, elementwiseStep, elementwiseWgsl, floatStorage } from '../common/webgpu.js';
import { numberScalar } from '../common/scalars.js';

export function scaleWgsl(storage: FloatStorage): string {
  return elementwiseWgsl(storage, {
    tensors: [{ name: 'X', write: true }],
    inputs: ['X'],
    output: 'X',
    expr: 'P.alpha * x',
    params: ['alpha: f32'],
  });
}

export const scaleWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args, _s, f) => args.length === 1 && floatStorage(args[0]!.dtype, f) !== undefined,
  plan(args, scalars, f) {
    const storage = floatStorage(args[0]!.dtype, f)!;
    const alpha = numberScalar('scale', scalars, 'alpha');
    return [
      elementwiseStep(
        storage,
        scaleWgsl(storage),
        numel(args[0]!.shape),
        [0],
        [{ type: 'f32', value: alpha }],
      ),
    ];
  },
};
