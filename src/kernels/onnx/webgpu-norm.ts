/**
 * onnx_batchnorm, onnx_layernorm and onnx_gemm on WebGPU (f32; other dtypes are declined and the queue
 * reports TANDEM_ERR_DTYPE). Batchnorm is one invocation per element; layernorm one per row, with the
 * mean first and the variance from it (two passes, as the float64 reference); gemm one per output with
 * the bias broadcast from c's strides (beta = 0 never reads c: a NaN there does not leak).
 */
import { numel } from '../../core/shape.js';
import type { TensorDesc } from '../../devices/device.js';
import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
import { linearStep, u32 } from './webgpu-steps.js';
import { LINEAR_MAIN } from '../common/webgpu.js';
import { gemmGeometry } from './matmul.js';
import { channels, epsilonOf, layernormRows } from './norm.js';
import { broadcastStrides } from './shapes.js';

function f32Only(count: number): (args: readonly TensorDesc[]) => boolean {
  return (args) => args.length === count && args.every((a) => a.dtype === 'f32');
}

const bindings = (names: readonly string[]) =>
  names
    .map(
      (n, i) =>
        `@group(0) @binding(${i}) var<storage, ${i === names.length - 1 ? 'read_write' : 'read'}> ${n}: array<f32>;`,
    )
    .join('\n');

const BATCHNORM_WGSL = `struct Params { n: u32, C: u32, inner: u32, eps: f32 }
${bindings(['X', 'S', 'B', 'M', 'V', 'Y'])}
@group(0) @binding(6) var<uniform> P: Params;
${LINEAR_MAIN}
  if (i >= P.n) { return; }
  let c = (i / P.inner) % P.C;
  Y[i] = (X[i] - M[c]) / sqrt(V[c] + P.eps) * S[c] + B[c];
}
`;

export const onnxBatchnormWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: f32Only(6),
  plan(args, scalars) {
    const { c, inner } = channels(args[0]!);
    const n = numel(args[0]!.shape);
    const eps = epsilonOf('onnx_batchnorm', scalars);
    return linearStep(
      BATCHNORM_WGSL,
      n,
      [0, 1, 2, 3, 4, 5],
      [u32(n), u32(c), u32(inner), { type: 'f32', value: eps }],
    );
  },
};

const LAYERNORM_WGSL = `struct Params { rows: u32, len: u32, eps: f32 }
${bindings(['X', 'S', 'B', 'Y'])}
@group(0) @binding(4) var<uniform> P: Params;
${LINEAR_MAIN}
  if (i >= P.rows) { return; }
  let start = i * P.len;
  var sum = 0.0;
  for (var k = 0u; k < P.len; k++) { sum += X[start + k]; }
  let mean = sum / f32(P.len);
  var sq = 0.0;
  for (var k = 0u; k < P.len; k++) { let d = X[start + k] - mean; sq += d * d; }
  let rstd = 1.0 / sqrt(sq / f32(P.len) + P.eps);
  for (var k = 0u; k < P.len; k++) { Y[start + k] = (X[start + k] - mean) * rstd * S[k] + B[k]; }
}
`;

export const onnxLayernormWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: f32Only(4),
  plan(args, scalars) {
    const { rows, len } = layernormRows(args[0]!, scalars);
    const eps = epsilonOf('onnx_layernorm', scalars);
    return linearStep(LAYERNORM_WGSL, rows, [0, 1, 2, 3], [u32(rows), u32(len), { type: 'f32', value: eps }]);
  },
};

/** y = alpha·op(a)·op(b) + beta·c; a's and b's element strides along (row, k) and (k, col) as uniforms. */
const GEMM_WGSL = `struct Params { n: u32, N: u32, K: u32, ar: u32, ak: u32, bk: u32, bc: u32, cr: u32, cc: u32,
  alpha: f32, beta: f32 }
${bindings(['A', 'Bm', 'C', 'Y'])}
@group(0) @binding(4) var<uniform> P: Params;
${LINEAR_MAIN}
  if (i >= P.n) { return; }
  let col = i % P.N;
  let row = i / P.N;
  var acc = 0.0;
  for (var k = 0u; k < P.K; k++) { acc += A[row * P.ar + k * P.ak] * Bm[k * P.bk + col * P.bc]; }
  var y = P.alpha * acc;
  if (P.beta != 0.0) { y += P.beta * C[row * P.cr + col * P.cc]; }
  Y[i] = y;
}
`;

export const onnxGemmWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: f32Only(4),
  plan(args, scalars) {
    const g = gemmGeometry(args[0]!, args[1]!, args[2]!, args[3]!, scalars);
    // a is [M,K] ([K,M] transposed), b is [K,N] ([N,K]); c broadcasts to [M,N] (strides 0 on 1s).
    const [ar, ak] = g.transA ? [1, g.m] : [g.k, 1];
    const [bk, bc] = g.transB ? [1, g.k] : [g.n, 1];
    const [cr, cc] = broadcastStrides(args[2]!.shape, [g.m, g.n]) as [number, number];
    const n = g.m * g.n;
    const words = [
      ...[n, g.n, g.k, ar, ak, bk, bc, cr, cc].map(u32),
      { type: 'f32' as const, value: g.alpha },
      { type: 'f32' as const, value: g.beta },
    ];
    return linearStep(GEMM_WGSL, n, [0, 1, 2, 3], words);
  },
};
