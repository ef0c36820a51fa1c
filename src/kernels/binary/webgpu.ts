/**
 * WGSL element-wise binary math on same-shape tensors: f32 arithmetic, f16 storage native or packed
 * (common/webgpu.ts). pow follows the float64 reference where WGSL's pow is undefined (x <= 0):
 * integer exponents of negative bases keep their sign, other negative-base powers are NaN. Infinity and
 * NaN arrive as uniforms because WGSL rejects non-finite constant expressions.
 */
import { numel } from '../../core/shape.js';
import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
import { type FloatStorage, elementwiseStep, elementwiseWgsl, floatStorage } from '../common/webgpu.js';
import { enumScalar } from '../common/scalars.js';
import { BINARY_OPS, type BinaryOp } from './ops.js';

const WGSL_EXPR: Readonly<Record<BinaryOp, string>> = {
  add: 'a + b',
  sub: 'a - b',
  mul: 'a * b',
  div: 'a / b',
  max: 'max(a, b)',
  min: 'min(a, b)',
  pow: 'pow_ref(a, b)',
};

const POW_REF = `fn pow_ref(a: f32, b: f32) -> f32 {
  if (b == 0.0) { return 1.0; }
  if (a > 0.0) { return pow(a, b); }
  if (a == 0.0) { return select(P.inf, 0.0, b > 0.0); }
  if (floor(b) != b) { return P.nan; }
  let r = pow(-a, b);
  return select(r, -r, fract(b * 0.5) != 0.0);
}
`;

export function binaryWgsl(op: BinaryOp, storage: FloatStorage): string {
  return elementwiseWgsl(storage, {
    tensors: [{ name: 'A' }, { name: 'B' }, { name: 'C', write: true }],
    inputs: ['A', 'B'],
    output: 'C',
    expr: WGSL_EXPR[op],
    params: ['inf: f32', 'nan: f32'],
    ...(op === 'pow' ? { helpers: POW_REF } : {}),
  });
}

export const binaryWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args, _s, f) =>
    args.length === 3 &&
    args.every((a) => a.dtype === args[0]!.dtype) &&
    floatStorage(args[0]!.dtype, f) !== undefined,
  plan(args, scalars, f) {
    const storage = floatStorage(args[0]!.dtype, f)!;
    const op = enumScalar('binary', scalars, 'op', BINARY_OPS);
    return [
      elementwiseStep(
        storage,
        binaryWgsl(op, storage),
        numel(args[0]!.shape),
        [0, 1, 2],
        [
          { type: 'f32', value: Infinity },
          { type: 'f32', value: NaN },
        ],
      ),
    ];
  },
};
