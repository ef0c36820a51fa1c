/**
 * WGSL element-wise binary math on same-shape tensors: one invocation per element, f32 arithmetic
 * (f16 storage converted). pow follows the float64 reference where WGSL's pow is undefined (x <= 0):
 * integer exponents of negative bases keep their sign, other negative-base powers are NaN. Infinity and
 * NaN arrive as uniforms because WGSL rejects non-finite constant expressions.
 */
import { numel } from '../../core/shape.js';
import type { TensorDesc } from '../../devices/device.js';
import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
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

export function binaryWgsl(op: BinaryOp, t: 'f32' | 'f16'): string {
  return `${t === 'f16' ? 'enable f16;\n' : ''}struct Params { n: u32, inf: f32, nan: f32 }
@group(0) @binding(0) var<storage, read> A: array<${t}>;
@group(0) @binding(1) var<storage, read> B: array<${t}>;
@group(0) @binding(2) var<storage, read_write> C: array<${t}>;
@group(0) @binding(3) var<uniform> P: Params;
${op === 'pow' ? POW_REF : ''}@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (i >= P.n) { return; }
  let a = f32(A[i]);
  let b = f32(B[i]);
  C[i] = ${t}(${WGSL_EXPR[op]});
}
`;
}

function floatType(args: readonly TensorDesc[], f16: boolean): 'f32' | 'f16' | undefined {
  const d = args[0]?.dtype;
  if (!args.every((a) => a.dtype === d)) return undefined;
  return d === 'f32' || (d === 'f16' && f16) ? d : undefined;
}

export const binaryWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args, _s, f) => args.length === 3 && floatType(args, f.shaderF16) !== undefined,
  plan(args, scalars) {
    const n = numel(args[0]!.shape);
    const op = enumScalar('binary', scalars, 'op', BINARY_OPS);
    return [
      {
        kind: 'dispatch',
        wgsl: binaryWgsl(op, args[0]!.dtype === 'f16' ? 'f16' : 'f32'),
        entry: 'main',
        bind: [0, 1, 2],
        uniforms: [
          { type: 'u32', value: n },
          { type: 'f32', value: Infinity },
          { type: 'f32', value: NaN },
        ],
        workgroups: { linear: Math.ceil(n / 256) },
      },
    ];
  },
};
