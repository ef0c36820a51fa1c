/**
 * WGSL activation_backward: dx (+)= op′(x)·dy, f32 arithmetic. The plan also serves linear_dx_act,
 * which applies it in place to dy·w (then x is pre and dy is dx itself, bound once read_write).
 */
import { numel } from '../../core/shape.js';
import type { WebGpuKernel, WgslDispatch } from '../../devices/webgpu/kernel-api.js';
import { type FloatStorage, elementwiseStep, elementwiseWgsl, floatStorage } from '../common/webgpu.js';
import { enumScalar } from '../common/scalars.js';
import { ACT_OPS, type ActOp } from '../activation/ops.js';
import { ACT_WGSL, actGradExpr } from '../activation/webgpu-source.js';
import { accumulateOf } from '../linear_dw/def.js';

/** dx = op′(x)·dx in place: bind [x, dx]. */
export function actGradInPlaceStep(
  storage: FloatStorage,
  op: ActOp,
  elements: number,
  bind: readonly number[],
): WgslDispatch {
  const wgsl = elementwiseWgsl(storage, {
    tensors: [{ name: 'X' }, { name: 'DX', write: true }],
    inputs: ['X', 'DX'],
    output: 'DX',
    expr: actGradExpr(op, 'x', 'dx'),
    helpers: ACT_WGSL,
  });
  return elementwiseStep(storage, wgsl, elements, bind);
}

export const activationBackwardWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args, _s, f) =>
    args.length === 3 &&
    args.every((a) => a.dtype === args[0]!.dtype) &&
    floatStorage(args[0]!.dtype, f) !== undefined,
  plan(args, scalars, f) {
    const storage = floatStorage(args[0]!.dtype, f)!;
    const op = enumScalar('activation_backward', scalars, 'op', ACT_OPS);
    const accumulate = accumulateOf('activation_backward', scalars);
    const grad = actGradExpr(op, 'x', 'dy');
    const wgsl = elementwiseWgsl(storage, {
      tensors: [{ name: 'X' }, { name: 'DY' }, { name: 'DX', write: true }],
      inputs: accumulate ? ['X', 'DY', 'DX'] : ['X', 'DY'],
      output: 'DX',
      expr: accumulate ? `${grad} + dx` : grad,
      helpers: ACT_WGSL,
    });
    return [elementwiseStep(storage, wgsl, numel(args[0]!.shape), [0, 1, 2])];
  },
};
