/**
 * WGSL element-wise unary math: one invocation per element, f32 arithmetic (f16 storage converted on
 * load and store). The op is baked into the source, so each op compiles one pipeline.
 */
import { numel } from '../../core/shape.js';
import type { TensorDesc } from '../../devices/device.js';
import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
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

export function unaryWgsl(op: UnaryOp, t: 'f32' | 'f16'): string {
  return `${t === 'f16' ? 'enable f16;\n' : ''}struct Params { n: u32 }
@group(0) @binding(0) var<storage, read> X: array<${t}>;
@group(0) @binding(1) var<storage, read_write> Y: array<${t}>;
@group(0) @binding(2) var<uniform> P: Params;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (i >= P.n) { return; }
  let x = f32(X[i]);
  Y[i] = ${t}(${WGSL_EXPR[op]});
}
`;
}

function floatType(args: readonly TensorDesc[], f16: boolean): 'f32' | 'f16' | undefined {
  const d = args[0]?.dtype;
  if (!args.every((a) => a.dtype === d)) return undefined;
  return d === 'f32' || (d === 'f16' && f16) ? d : undefined;
}

export const unaryWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args, _s, f) => args.length === 2 && floatType(args, f.shaderF16) !== undefined,
  plan(args, scalars) {
    const n = numel(args[0]!.shape);
    const op = enumScalar('unary', scalars, 'op', UNARY_OPS);
    return [
      {
        kind: 'dispatch',
        wgsl: unaryWgsl(op, args[0]!.dtype === 'f16' ? 'f16' : 'f32'),
        entry: 'main',
        bind: [0, 1],
        uniforms: [{ type: 'u32', value: n }],
        workgroups: { linear: Math.ceil(n / 256) },
      },
    ];
  },
};
