/**
 * WebGPU versions of onnx_unary and onnx_binary (f32 arithmetic; f16 native or packed and bf16 packed
 * storage through common/webgpu.ts). onnx_binary broadcasts in f32; same-shape operands take every
 * float storage; f64 max/min run on the words (webgpu-f64.ts). Functions WGSL lacks or computes with
 * cancellation (erf, erfc for Gelu, log1p, expm1, the hyperbolic ops) come from webgpu-math.ts, within
 * a few ULP of the float64 reference.
 */
import { numel } from '../../core/shape.js';
import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
import { binaryWgsl } from '../binary/webgpu.js';
import { enumScalar } from '../common/scalars.js';
import { elementwiseStep, elementwiseWgsl, floatStorage, LINEAR_MAIN } from '../common/webgpu.js';
import { pad6 } from './common.js';
import { BINARY_OPS, type BinaryOp, type UnaryOp, unaryParams } from './elementwise-ops.js';
import { broadcastStrides, sameShape } from './shapes.js';
import { onnxBinaryF64WebGpu } from './webgpu-f64.js';
import { UNARY_MATH_WGSL } from './webgpu-math.js';

export const UNARY_WGSL: Partial<Record<UnaryOp, string>> = {
  relu: 'select(x, 0.0, x < 0.0)',
  leaky_relu: 'select(x, P.alpha * x, x < 0.0)',
  sigmoid: '1.0 / (1.0 + exp(-x))',
  hard_sigmoid: 'clamp(P.alpha * x + P.beta, 0.0, 1.0)',
  hard_swish: 'x * clamp(x / 6.0 + 0.5, 0.0, 1.0)',
  // Clamped as unary's tanh: some drivers build tanh from exp and overflow past |x| ~ 44.
  tanh: 'tanh(clamp(x, -15.0, 15.0))',
  sqrt: 'sqrt(x)',
  exp: 'exp(x)',
  log: 'log(x)',
  neg: '-x',
  abs: 'abs(x)',
  reciprocal: '1.0 / x',
  gelu_tanh: '0.5 * x * (1.0 + tanh(clamp(0.7978845608028654 * (x + 0.044715 * x * x * x), -15.0, 15.0)))',
  clip: 'select(select(x, P.lo, x < P.lo), P.hi, x > P.hi)',
  identity: 'x',
  // WGSL's round() rounds halves to even, as numpy and CUDA's rint.
  round: 'round(x)',
  floor: 'floor(x)',
  ceil: 'ceil(x)',
  // ±0 and NaN fall through both tests and are kept.
  sign: 'select(select(x, 1.0, x > 0.0), -1.0, x < 0.0)',
  thresholded_relu: 'select(0.0, x, x > P.alpha)',
  shrink: 'select(select(0.0, x - P.beta, x > P.alpha), x + P.beta, x < -P.alpha)',
  sinh: 't_sinh(x)',
  cosh: 't_cosh(x)',
  asinh: 't_asinh(x)',
  acosh: 't_acosh(x)',
  atanh: 't_atanh(x)',
  erf: 't_erf(x)',
  gelu: 't_gelu(x)',
  // Past 30 the reference returns x itself (log1p(e^x) = x in double there).
  softplus: 'select(t_log1p(t_exp(x)), x, x > 30.0)',
  elu: 'select(x, P.alpha * t_expm1(x), x < 0.0)',
};

export const onnxUnaryWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args, scalars, f) =>
    args.length === 2 &&
    args[0]!.dtype === args[1]!.dtype &&
    floatStorage(args[0]!.dtype, f) !== undefined &&
    UNARY_WGSL[unaryParams(scalars).op] !== undefined,
  plan(args, scalars, f) {
    const storage = floatStorage(args[0]!.dtype, f)!;
    const p = unaryParams(scalars);
    const wgsl = elementwiseWgsl(storage, {
      tensors: [{ name: 'X' }, { name: 'Y', write: true }],
      inputs: ['X'],
      output: 'Y',
      expr: UNARY_WGSL[p.op]!,
      params: ['alpha: f32', 'beta: f32', 'lo: f32', 'hi: f32'],
      helpers: UNARY_MATH_WGSL,
    });
    // f32 uniforms: clip's ±f64-max defaults become ±inf, which clamps nothing, as intended.
    return [
      elementwiseStep(
        storage,
        wgsl,
        numel(args[0]!.shape),
        [0, 1],
        [
          { type: 'f32', value: p.alpha },
          { type: 'f32', value: p.beta },
          { type: 'f32', value: p.min },
          { type: 'f32', value: p.max },
        ],
      ),
    ];
  },
};

export const BINARY_WGSL: Record<BinaryOp, string> = {
  add: 'a + b',
  sub: 'a - b',
  mul: 'a * b',
  div: 'a / b',
  max: 'max(a, b)',
  min: 'min(a, b)',
  pow: 'pow_ref(a, b)',
};

/** binary/webgpu.ts's pow rule (WGSL's pow is undefined for a ≤ 0): integer exponents keep the sign. */
export const POW_REF = `fn pow_ref(a: f32, b: f32) -> f32 {
  if (b == 0.0) { return 1.0; }
  if (a > 0.0) { return pow(a, b); }
  if (a == 0.0) { return select(P.inf, 0.0, b > 0.0); }
  if (floor(b) != b) { return P.nan; }
  let r = pow(-a, b);
  return select(r, -r, fract(b * 0.5) != 0.0);
}
`;

const FIELDS = ['d', 'sa', 'sb'].flatMap((p) => [0, 1, 2, 3, 4, 5].map((k) => `${p}${k}: u32`));

function broadcastWgsl(op: BinaryOp): string {
  const offset = (s: string) => `
  var r_${s} = i;
  var o_${s} = 0u;
  for (var k = 5; k >= 0; k--) { let c = r_${s} % dims[k]; r_${s} = r_${s} / dims[k]; o_${s} += c * ${s}[k]; }`;
  return `struct Params { n: u32, inf: f32, nan: f32, ${FIELDS.join(', ')} }
@group(0) @binding(0) var<storage, read> A: array<f32>;
@group(0) @binding(1) var<storage, read> B: array<f32>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
@group(0) @binding(3) var<uniform> P: Params;
${op === 'pow' ? POW_REF : ''}fn op(a: f32, b: f32) -> f32 { return ${BINARY_WGSL[op]}; }
${LINEAR_MAIN}
  if (i >= P.n) { return; }
  var dims = array<u32, 6>(P.d0, P.d1, P.d2, P.d3, P.d4, P.d5);
  var sa = array<u32, 6>(P.sa0, P.sa1, P.sa2, P.sa3, P.sa4, P.sa5);
  var sb = array<u32, 6>(P.sb0, P.sb1, P.sb2, P.sb3, P.sb4, P.sb5);${offset('sa')}${offset('sb')}
  C[i] = op(A[o_sa], B[o_sb]);
}
`;
}

export const onnxBinaryWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args, scalars, f) => {
    if (args.length !== 3 || args.some((a) => a.dtype !== args[0]!.dtype)) return false;
    if (args[0]!.dtype === 'f64') return onnxBinaryF64WebGpu.supports(args, scalars, f);
    const same = sameShape(args[0]!.shape, args[2]!.shape) && sameShape(args[1]!.shape, args[2]!.shape);
    return same ? floatStorage(args[0]!.dtype, f) !== undefined : args[0]!.dtype === 'f32';
  },
  plan(args, scalars, f) {
    if (args[0]!.dtype === 'f64') return onnxBinaryF64WebGpu.plan(args, scalars, f);
    const op = enumScalar('onnx_binary', scalars, 'op', BINARY_OPS);
    const specials = [
      { type: 'f32', value: Infinity },
      { type: 'f32', value: NaN },
    ] as const;
    const c = args[2]!.shape;
    if (sameShape(args[0]!.shape, c) && sameShape(args[1]!.shape, c)) {
      const storage = floatStorage(args[0]!.dtype, f)!;
      return [elementwiseStep(storage, binaryWgsl(op, storage), numel(c), [0, 1, 2], specials)];
    }
    const a = pad6(c, broadcastStrides(args[0]!.shape, c));
    const b = pad6(c, broadcastStrides(args[1]!.shape, c));
    const words = [...a.dims, ...a.strides, ...b.strides].map((value) => ({ type: 'u32' as const, value }));
    return [elementwiseStep('f32', broadcastWgsl(op), numel(c), [0, 1, 2], [...specials, ...words])];
  },
};
