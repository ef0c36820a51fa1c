/**
 * WGSL linear and linear_act: the bias broadcast into the output, then the existing gemm WGSL with
 * beta = 1 adds x·wᵀ (f32 accumulation, one rounding), then (linear_act) the activation as an
 * element-wise step from pre into y. Every float storage the gemm WGSL has: f32, f16 (native or
 * packed), bf16 (packed).
 */
import type { Scalars, TensorDesc } from '../../devices/device.js';
import type {
  WebGpuFeatures,
  WebGpuKernel,
  WebGpuStep,
  WgslDispatch,
} from '../../devices/webgpu/kernel-api.js';
import {
  type FloatStorage,
  LINEAR_MAIN,
  elementwiseStep,
  elementwiseWgsl,
  floatStorage,
  isPacked,
  packingWgsl,
} from '../common/webgpu.js';
import { enumScalar } from '../common/scalars.js';
import { ACT_OPS } from '../activation/ops.js';
import { ACT_WGSL, actExpr } from '../activation/webgpu-source.js';
import { gemmWebGpu } from '../gemm/webgpu.js';

function header(storage: FloatStorage, fields: string): string {
  return `${storage === 'f16' ? 'enable f16;\n' : ''}struct Params { n: u32, ${fields} }\n`;
}

function elem(storage: FloatStorage): string {
  return isPacked(storage) ? 'u32' : storage;
}

/** Element j of a bound 16-bit-packed or plain array as f32. */
function loadFn(storage: FloatStorage, name: string, buffer: string): string {
  return isPacked(storage)
    ? `fn ${name}(j: u32) -> f32 { return unpack2(${buffer}[j / 2u])[j % 2u]; }\n`
    : `fn ${name}(j: u32) -> f32 { return f32(${buffer}[j]); }\n`;
}

/** bind [b, y]: y[i, j] = b[j], copied exactly (one invocation per element, or per word when packed). */
export function biasRowsStep(
  storage: FloatStorage,
  rows: number,
  cols: number,
  bind: readonly number[],
): WgslDispatch {
  const T = elem(storage);
  const store = isPacked(storage)
    ? `let e = 2u * i;\n  Y[i] = pack2(vec2<f32>(ldb(e % P.cols), ldb((e + 1u) % P.cols)));`
    : `Y[i] = ${T}(ldb(i % P.cols));`;
  const wgsl = `${header(storage, 'cols: u32')}@group(0) @binding(0) var<storage, read> B: array<${T}>;
@group(0) @binding(1) var<storage, read_write> Y: array<${T}>;
@group(0) @binding(2) var<uniform> P: Params;
${isPacked(storage) ? packingWgsl(storage) : ''}${loadFn(storage, 'ldb', 'B')}${LINEAR_MAIN}
  if (i >= P.n) { return; }
  ${store}
}
`;
  return elementwiseStep(storage, wgsl, rows * cols, bind, [{ type: 'u32', value: cols }]);
}

/**
 * bind [dy, db]: db[j] (+)= Σ_i dy[i, j], summed in f32 by one invocation per column (per pair of
 * columns when packed). Serial over the rows: meant for the small layers the WebGPU path trains.
 */
export function columnSumStep(
  storage: FloatStorage,
  rows: number,
  cols: number,
  accumulate: boolean,
  bind: readonly number[],
): WgslDispatch {
  const T = elem(storage);
  const acc = (old: string): string => (accumulate ? ` + ${old}` : '');
  const store = isPacked(storage)
    ? `DB[i] = pack2(vec2<f32>(colsum(2u * i), colsum(2u * i + 1u))${acc('unpack2(DB[i])')});`
    : `DB[i] = ${T}(colsum(i)${acc('f32(DB[i])')});`;
  const wgsl = `${header(storage, 'rows: u32, cols: u32')}@group(0) @binding(0) var<storage, read> DY: array<${T}>;
@group(0) @binding(1) var<storage, read_write> DB: array<${T}>;
@group(0) @binding(2) var<uniform> P: Params;
${isPacked(storage) ? packingWgsl(storage) : ''}${loadFn(storage, 'ld', 'DY')}fn colsum(j: u32) -> f32 {
  if (j >= P.cols) { return 0.0; }
  var s = 0.0;
  for (var r = 0u; r < P.rows; r = r + 1u) { s = s + ld(r * P.cols + j); }
  return s;
}
${LINEAR_MAIN}
  if (i >= P.n) { return; }
  ${store}
}
`;
  return elementwiseStep(storage, wgsl, cols, bind, [
    { type: 'u32', value: rows },
    { type: 'u32', value: cols },
  ]);
}

/** The gemm WGSL's steps on (a, b, c), rebound to the launch's argument indices. */
export function gemmSteps(
  a: TensorDesc,
  b: TensorDesc,
  c: TensorDesc,
  scalars: Scalars,
  f: WebGpuFeatures,
  bind: readonly [number, number, number],
): WebGpuStep[] {
  return gemmWebGpu
    .plan([a, b, c], scalars, f)
    .map((s) => (s.kind === 'dispatch' ? { ...s, bind: s.bind.map((i) => bind[i]!) } : s));
}

/** Same dtype everywhere and one the gemm WGSL stores (f32, f16, bf16). */
export function linearSupports(args: readonly TensorDesc[], f: WebGpuFeatures): boolean {
  const d = args[0]!.dtype;
  return (
    (d === 'f32' || d === 'f16' || d === 'bf16') &&
    args.every((a) => a.dtype === d) &&
    floatStorage(d, f) !== undefined
  );
}

/** Steps for out = x·wᵀ + b (args x, w, b at 0..2, `out` at index `out`). */
function forwardSteps(args: readonly TensorDesc[], f: WebGpuFeatures, out: number): WebGpuStep[] {
  const [x, w] = args as [TensorDesc, TensorDesc];
  const [m] = x.shape as [number, number];
  const n = w.shape[0]!;
  if (m === 0 || n === 0) return [];
  const storage = floatStorage(x.dtype, f)!;
  return [
    biasRowsStep(storage, m, n, [2, out]),
    ...gemmSteps(x, w, args[out]!, { transB: true, beta: 1 }, f, [0, 1, out]),
  ];
}

export const linearWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args, _s, f) => args.length === 4 && linearSupports(args, f),
  plan: (args, _scalars, f) => forwardSteps(args, f, 3),
};

export const linearActWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args, _s, f) => args.length === 5 && linearSupports(args, f),
  plan(args, scalars, f) {
    const act = enumScalar('linear_act', scalars, 'act', ACT_OPS);
    const steps = forwardSteps(args, f, 3);
    if (steps.length === 0) return steps;
    const storage = floatStorage(args[0]!.dtype, f)!;
    const [m, n] = args[3]!.shape as [number, number];
    const wgsl = elementwiseWgsl(storage, {
      tensors: [{ name: 'PRE' }, { name: 'Y', write: true }],
      inputs: ['PRE'],
      output: 'Y',
      expr: actExpr(act, 'pre'),
      helpers: ACT_WGSL,
    });
    return [...steps, elementwiseStep(storage, wgsl, m * n, [3, 4])];
  },
};
