/**
 * The ONNX pooling, reduction, softmax and matmul ops on WebGPU (f32; other dtypes are declined and
 * the queue reports TANDEM_ERR_DTYPE). One invocation per output element (per line for softmax) with a
 * plain loop: the ops the PaddleOCR networks run at small sizes, where simplicity beats tiling. NaN
 * rules follow the CUDA kernels (max/min propagate NaN).
 */
import { numel } from '../../core/shape.js';
import type { TensorDesc } from '../../devices/device.js';
import type { WebGpuKernel, WebGpuStep } from '../../devices/webgpu/kernel-api.js';
import { linearStep, u32 } from './webgpu-steps.js';
import { LINEAR_MAIN } from '../common/webgpu.js';
import { pad6 } from './common.js';
import { matmulGeometry } from './matmul.js';
import { softmaxGeometry } from './norm.js';
import { globalGeometry, poolGeometry } from './pool.js';
import { REDUCE_OPS, reducePlan } from './reduce.js';
import { boolScalar, enumScalar } from '../common/scalars.js';
import { broadcastStrides, contiguousStrides } from './shapes.js';

function f32Kernel(
  count: number,
  plan: (args: readonly TensorDesc[], scalars: Parameters<WebGpuKernel['plan']>[1]) => WebGpuStep[],
): WebGpuKernel {
  return {
    kind: 'webgpu-kernel',
    supports: (args) => args.length === count && args.every((a) => a.dtype === 'f32'),
    plan,
  };
}

const IO = `@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read_write> Y: array<f32>;
@group(0) @binding(2) var<uniform> P: Params;`;

/** max that propagates NaN (a + b is NaN when either is). */
const NAN_MAX = `fn nmax(a: f32, b: f32) -> f32 { if (a != a || b != b) { return a + b; } return max(a, b); }
fn nmin(a: f32, b: f32) -> f32 { if (a != a || b != b) { return a + b; } return min(a, b); }
`;

function poolWgsl(isMax: boolean, includePad: boolean): string {
  return `struct Params { n: u32, H: u32, W: u32, HO: u32, WO: u32, KH: u32, KW: u32, SH: u32, SW: u32,
  DH: u32, DW: u32, PT: u32, PL: u32, PB: u32, PR: u32, ninf: f32 }
${IO}
${NAN_MAX}${LINEAR_MAIN}
  if (i >= P.n) { return; }
  let ow = i % P.WO;
  let oh = (i / P.WO) % P.HO;
  let xb = (i / (P.WO * P.HO)) * P.H * P.W;
  let h0 = i32(oh * P.SH) - i32(P.PT);
  let w0 = i32(ow * P.SW) - i32(P.PL);
  var acc = ${isMax ? 'P.ninf' : '0.0'};
  var inside = 0u;
  var padded = 0u;
  for (var r = 0u; r < P.KH; r++) {
    let ih = h0 + i32(r * P.DH);
    for (var q = 0u; q < P.KW; q++) {
      let iw = w0 + i32(q * P.DW);
      if (ih < i32(P.H + P.PB) && iw < i32(P.W + P.PR)) { padded++; }
      if (ih < 0 || ih >= i32(P.H) || iw < 0 || iw >= i32(P.W)) { continue; }
      let v = X[xb + u32(ih) * P.W + u32(iw)];
      inside++;
      ${isMax ? 'acc = nmax(acc, v);' : 'acc += v;'}
    }
  }
  Y[i] = ${isMax ? 'acc' : `acc / f32(${includePad ? 'padded' : 'inside'})`};
}
`;
}

export const onnxPoolWebGpu = f32Kernel(2, (args, scalars) => {
  const g = poolGeometry(args[0]!, args[1]!, scalars);
  const n = numel(args[1]!.shape);
  const geo = [n, g.h, g.w, g.ho, g.wo, g.kh, g.kw, g.sh, g.sw, g.dh, g.dw, ...g.pads].map(u32);
  const wgsl = poolWgsl(g.op === 'max', g.countIncludePad);
  return linearStep(wgsl, n, [0, 1], [...geo, { type: 'f32', value: -Infinity }]);
});

export const onnxGlobalPoolWebGpu = f32Kernel(2, (args, scalars) => {
  const { planes, size } = globalGeometry(args[0]!, args[1]!);
  const isMax = enumScalar('onnx_global_pool', scalars, 'op', ['avg', 'max'] as const) === 'max';
  const wgsl = `struct Params { n: u32, size: u32, ninf: f32 }
${IO}
${NAN_MAX}${LINEAR_MAIN}
  if (i >= P.n) { return; }
  var acc = ${isMax ? 'P.ninf' : '0.0'};
  for (var j = 0u; j < P.size; j++) { let v = X[i * P.size + j]; ${isMax ? 'acc = nmax(acc, v);' : 'acc += v;'} }
  Y[i] = ${isMax ? 'acc' : 'acc / f32(P.size)'};
}
`;
  return linearStep(wgsl, planes, [0, 1], [u32(planes), u32(size), { type: 'f32', value: -Infinity }]);
});

/** Per reduce op: the initial value (a uniform field), how a value joins, and the final transform. */
const REDUCE_WGSL: Record<(typeof REDUCE_OPS)[number], { init: string; join: string; end: string }> = {
  sum: { init: '0.0', join: 'acc + v', end: 'acc' },
  mean: { init: '0.0', join: 'acc + v', end: 'acc / f32(P.count)' },
  max: { init: 'P.ninf', join: 'nmax(acc, v)', end: 'acc' },
  min: { init: '-P.ninf', join: 'nmin(acc, v)', end: 'acc' },
  prod: { init: '1.0', join: 'acc * v', end: 'acc' },
  sum_square: { init: '0.0', join: 'acc + v * v', end: 'acc' },
  l2: { init: '0.0', join: 'acc + v * v', end: 'sqrt(acc)' },
  log_sum_exp: { init: 'P.ninf', join: 'nmax(acc, v)', end: 'lse(base, acc)' },
};

const OFFSET6 = `fn offset6(j: u32, d: array<u32, 6>, s: array<u32, 6>) -> u32 {
  var r = j;
  var o = 0u;
  for (var k = 5; k >= 0; k--) { o += (r % d[k]) * s[k]; r = r / d[k]; }
  return o;
}
`;

const arr = (p: string) => `array<u32, 6>(${[0, 1, 2, 3, 4, 5].map((k) => `P.${p}${k}`).join(', ')})`;
const fields6 = (...ps: string[]) =>
  ps.flatMap((p) => [0, 1, 2, 3, 4, 5].map((k) => `${p}${k}: u32`)).join(', ');

export const onnxReduceWebGpu = f32Kernel(2, (args, scalars) => {
  const p = reducePlan(args[0]!, args[1]!, scalars);
  const r = REDUCE_WGSL[p.op];
  // log_sum_exp: max first (the CUDA kernel's rule: an infinite or NaN max is the result as is).
  const lse = `fn lse(base: u32, m: f32) -> f32 {
  if (m != m || m == P.ninf || m == -P.ninf) { return m; }
  var s = 0.0;
  for (var j = 0u; j < P.count; j++) { s += exp(X[base + offset6(j, ${arr('rd')}, ${arr('rs')})] - m); }
  return m + log(s);
}
`;
  const wgsl = `struct Params { n: u32, count: u32, ninf: f32, ${fields6('kd', 'ks', 'rd', 'rs')} }
${IO}
${NAN_MAX}${OFFSET6}${lse}${LINEAR_MAIN}
  if (i >= P.n) { return; }
  let base = offset6(i, ${arr('kd')}, ${arr('ks')});
  var acc = ${r.init};
  for (var j = 0u; j < P.count; j++) {
    let v = X[base + offset6(j, ${arr('rd')}, ${arr('rs')})];
    acc = ${r.join};
  }
  Y[i] = ${r.end};
}
`;
  const k = pad6(p.keptDims, p.keptStrides);
  const d = pad6(p.redDims, p.redStrides);
  const words = [
    u32(p.outputs),
    u32(p.count),
    { type: 'f32' as const, value: -Infinity },
    ...[...k.dims, ...k.strides, ...d.dims, ...d.strides].map(u32),
  ];
  return linearStep(wgsl, p.outputs, [0, 1], words);
});

export const onnxSoftmaxWebGpu = f32Kernel(2, (args, scalars) => {
  const { outer, len, inner } = softmaxGeometry(args[0]!, scalars);
  const log = boolScalar('onnx_softmax', scalars, 'log', false);
  const wgsl = `struct Params { n: u32, len: u32, inner: u32, ninf: f32 }
${IO}
${NAN_MAX}${LINEAR_MAIN}
  if (i >= P.n) { return; }
  let start = (i / P.inner) * P.len * P.inner + i % P.inner;
  var m = P.ninf;
  for (var k = 0u; k < P.len; k++) { m = nmax(m, X[start + k * P.inner]); }
  var s = 0.0;
  for (var k = 0u; k < P.len; k++) { s += exp(X[start + k * P.inner] - m); }
  let lse = log(s);
  for (var k = 0u; k < P.len; k++) {
    let d = X[start + k * P.inner] - m;
    Y[start + k * P.inner] = ${log ? 'd - lse' : 'exp(d) / s'};
  }
}
`;
  const lines = outer * inner;
  return linearStep(
    wgsl,
    lines,
    [0, 1],
    [u32(lines), u32(len), u32(inner), { type: 'f32', value: -Infinity }],
  );
});

/** c[b] = a[b]·b[b] with numpy batch broadcasting: batch offsets from 6-d strides (batch rank ≤ 4). */
const MATMUL_WGSL = `struct Params { n: u32, M: u32, K: u32, N: u32, ${fields6('d', 'sa', 'sb')} }
@group(0) @binding(0) var<storage, read> A: array<f32>;
@group(0) @binding(1) var<storage, read> B: array<f32>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
@group(0) @binding(3) var<uniform> P: Params;
${OFFSET6}${LINEAR_MAIN}
  if (i >= P.n) { return; }
  let col = i % P.N;
  let row = (i / P.N) % P.M;
  let bi = i / (P.N * P.M);
  let ab = offset6(bi, ${arr('d')}, ${arr('sa')}) * P.M * P.K + row * P.K;
  let bb = offset6(bi, ${arr('d')}, ${arr('sb')}) * P.K * P.N + col;
  var acc = 0.0;
  for (var k = 0u; k < P.K; k++) { acc += A[ab + k] * B[bb + k * P.N]; }
  C[i] = acc;
}
`;

export const onnxMatmulWebGpu = f32Kernel(3, (args) => {
  const g = matmulGeometry(args[0]!, args[1]!, args[2]!);
  const batchShape = args[2]!.shape.slice(0, -2);
  // Matrix strides (in matrices) of a's and b's batch dims against the broadcast batch shape.
  const as = broadcastStrides(args[0]!.shape.slice(0, -2), batchShape);
  const bs = broadcastStrides(args[1]!.shape.slice(0, -2), batchShape);
  const d = pad6(batchShape, contiguousStrides(batchShape));
  const words = [
    ...[g.batch * g.m * g.n, g.m, g.k, g.n].map(u32),
    ...d.dims.map(u32),
    ...pad6(batchShape, as).strides.map(u32),
    ...pad6(batchShape, bs).strides.map(u32),
  ];
  return linearStep(MATMUL_WGSL, g.batch * g.m * g.n, [0, 1, 2], words);
});
