/**
 * WGSL element-wise unary math: f32 arithmetic, f16 storage native or packed (common/webgpu.ts).
 * The op is baked into the source, so each (op, storage) compiles one pipeline.
 */
import { numel } from '../../core/shape.js';
import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
import { type FloatStorage, elementwiseStep, elementwiseWgsl, floatStorage } from '../common/webgpu.js';
import { enumScalar } from '../common/scalars.js';
import { UNARY_OPS, type UnaryOp } from './ops.js';

const WGSL_EXPR: Readonly<Record<UnaryOp, string>> = {
  neg: '-x',
  abs: 'abs(x)',
  exp: 'exp(x)',
  log: 'log(x)',
  sqrt: 'sqrt(x)',
  // select keeps NaN (x < 0 is false for NaN), like the reference.
  relu: 'select(x, 0.0, x < 0.0)',
  // Clamped: some drivers build tanh from exp and overflow to NaN past |x| ~ 44; tanh(±15) is ±1 in f32.
  tanh: 'tanh(clamp(x, -15.0, 15.0))',
  sigmoid: '1.0 / (1.0 + exp(-x))',
  sin: 'sin(x)',
  cos: 'cos(x)',
  square: 'x * x',
  recip: '1.0 / x',
};

export function unaryWgsl(op: UnaryOp, storage: FloatStorage): string {
  return elementwiseWgsl(storage, {
    tensors: [{ name: 'X' }, { name: 'Y', write: true }],
    inputs: ['X'],
    output: 'Y',
    expr: WGSL_EXPR[op],
  });
}

export const unaryWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args, _s, f) =>
    args.length === 2 && args[0]!.dtype === args[1]!.dtype && floatStorage(args[0]!.dtype, f) !== undefined,
  plan(args, scalars, f) {
    const storage = floatStorage(args[0]!.dtype, f)!;
    const op = enumScalar('unary', scalars, 'op', UNARY_OPS);
    return [elementwiseStep(storage, unaryWgsl(op, storage), numel(args[0]!.shape), [0, 1])];
  },
};
