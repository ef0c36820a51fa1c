/**
 * WGSL for onnx_topk, onnx_cumsum and onnx_trilu (topk.ts, scan.ts).
 *
 * TopK: one invocation per output element repeats the CUDA program's selection passes up to its own
 * rank (O(rank·dim): simple, not fast), once for the values (stored bits of x, so 16-bit and u8 values
 * are written a word at a time, webgpu-elements.ts) and once for the i32 indices. Values are ranked
 * through orderWgsl: floats (f64 on its words) on order-preserving keys with NaN on the bits (above
 * every number), integers as i32.
 *
 * CumSum: one invocation per line along the axis, f32 and i32 (whose running sum is kept in 64 bits and
 * saturated at each store, as the CPU's double sums are), and f64 with a software double addition
 * (webgpu-f64.ts). 16-bit lines would share words between invocations: declined.
 */
import type { DType } from '../../core/dtype.js';
import type { WebGpuKernel, WebGpuStep } from '../../devices/webgpu/kernel-api.js';
import { LINEAR_MAIN } from '../common/webgpu.js';
import { numel } from '../../core/shape.js';
import { cumsumGeometry, triluGeometry } from './scan.js';
import { onnxCumsumF64WebGpu } from './webgpu-f64.js';
import { topkGeometry } from './topk.js';
import {
  BITS_DTYPES,
  bitsWgsl,
  ORDERED_DTYPES,
  orderWgsl,
  storeWordsWgsl,
  valueType,
  valueWgsl,
  wordCount,
  words,
} from './webgpu-elements.js';
import { linearStep } from './webgpu-steps.js';

/** `fn before(a, i, b, j) -> bool`: (a, i) comes first in the result's order (topk.ts's rule). */
function beforeWgsl(dtype: DType, largest: boolean): string {
  const t = valueType(dtype);
  return `fn before(a: ${t}, i: u32, b: ${t}, j: u32) -> bool {
  let an = v_nan(a);
  let bn = v_nan(b);
  if (an || bn) { return select(${largest ? 'an' : 'bn'}, i < j, an && bn); }
  if (!v_eq(a, b)) { return ${largest ? 'v_lt(b, a)' : 'v_lt(a, b)'}; }
  return i < j;
}
`;
}

function topkWgsl(dtype: DType, largest: boolean, values: boolean): string {
  const out = values ? 'V' : 'J';
  return `struct Params { n: u32, dim: u32, inner: u32, k: u32 }
@group(0) @binding(0) var<storage, read> X: array<u32>;
@group(0) @binding(1) var<storage, read_write> ${out}: array<u32>;
@group(0) @binding(2) var<uniform> P: Params;
${orderWgsl(dtype)}${valueWgsl('X', dtype)}${beforeWgsl(dtype, largest)}fn elem(e: u32, part: u32) -> u32 {
  let inn = e % P.inner;
  let rank = (e / P.inner) % P.k;
  let base = (e / (P.inner * P.k)) * P.dim * P.inner + inn;
  var pv = val_X(base);
  var pi = 0u;
  for (var r = 0u; r <= rank; r++) {
    // The first element in order after the previous pick (pv, pi).
    var bv = pv;
    var bi = 0xffffffffu;
    for (var j = 0u; j < P.dim; j++) {
      let v = val_X(base + j * P.inner);
      if (r > 0u && !before(pv, pi, v, j)) { continue; }
      if (bi == 0xffffffffu || before(v, j, bv, bi)) { bv = v; bi = j; }
    }
    pv = bv;
    pi = bi;
  }
  return ${values ? 'bits_X(base + pi * P.inner, part)' : 'pi'};
}
${LINEAR_MAIN}
  ${storeWordsWgsl(out, values ? dtype : 'i32')}
}
`;
}

export const onnxTopkWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args) =>
    args.length === 3 &&
    ORDERED_DTYPES.includes(args[0]!.dtype) &&
    args[1]!.dtype === args[0]!.dtype &&
    args[2]!.dtype === 'i32',
  plan(args, scalars) {
    const x = args[0]!;
    const g = topkGeometry(x, scalars);
    const n = g.outer * g.k * g.inner;
    const w = words([n, g.dim, g.inner, g.k]);
    return [
      ...linearStep(topkWgsl(x.dtype, g.largest, true), wordCount(x.dtype, n), [0, 1], w),
      ...linearStep(topkWgsl(x.dtype, g.largest, false), n, [0, 2], w),
    ];
  },
};

/** i32 running sums in 64 bits (lo word, hi word), saturated to i32 at each store. */
const I64_SUM_WGSL = `struct Acc { lo: u32, hi: i32 }
fn acc_add(a: Acc, v: i32) -> Acc {
  let lo = a.lo + bitcast<u32>(v);
  return Acc(lo, a.hi + select(0, -1, v < 0) + select(0, 1, lo < a.lo));
}
fn acc_get(a: Acc) -> i32 {
  if (a.hi > 0 || (a.hi == 0 && a.lo >= 0x80000000u)) { return 2147483647; }
  if (a.hi < -1 || (a.hi == -1 && a.lo < 0x80000000u)) { return -2147483647 - 1; }
  return bitcast<i32>(a.lo);
}
`;

function cumsumWgsl(dtype: 'f32' | 'i32', exclusive: boolean, reverse: boolean): string {
  const int = dtype === 'i32';
  const [zero, add, get] = int
    ? ['Acc(0u, 0)', 'acc = acc_add(acc, X[at]);', 'acc_get(acc)']
    : ['0.0', 'acc += X[at];', 'acc'];
  const step = exclusive ? `Y[at] = ${get};\n    ${add}` : `${add}\n    Y[at] = ${get};`;
  return `struct Params { n: u32, dim: u32, inner: u32 }
@group(0) @binding(0) var<storage, read> X: array<${dtype}>;
@group(0) @binding(1) var<storage, read_write> Y: array<${dtype}>;
@group(0) @binding(2) var<uniform> P: Params;
${int ? I64_SUM_WGSL : ''}${LINEAR_MAIN}
  if (i >= P.n) { return; }
  let base = (i / P.inner) * P.dim * P.inner + i % P.inner;
  var acc = ${zero};
  for (var t = 0u; t < P.dim; t++) {
    let at = base + ${reverse ? '(P.dim - 1u - t)' : 't'} * P.inner;
    ${step}
  }
}
`;
}

export const onnxCumsumWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args, scalars, f) =>
    args.length === 2 &&
    args[0]!.dtype === args[1]!.dtype &&
    (['f32', 'i32'].includes(args[0]!.dtype) || onnxCumsumF64WebGpu.supports(args, scalars, f)),
  plan(args, scalars, f): readonly WebGpuStep[] {
    const x = args[0]!;
    if (x.dtype === 'f64') return onnxCumsumF64WebGpu.plan(args, scalars, f);
    const g = cumsumGeometry(x, scalars);
    const n = g.outer * g.inner;
    const wgsl = cumsumWgsl(x.dtype as 'f32' | 'i32', g.exclusive, g.reverse);
    return linearStep(wgsl, g.dim === 0 ? 0 : n, [0, 1], words([n, g.dim, g.inner]));
  },
};

// ---- trilu

/** Elements kept or zeroed (the all-zero bits are 0 in every dtype), copied as bits: every dtype. */
function triluWgsl(dtype: DType, upper: boolean): string {
  return `struct Params { n: u32, rows: u32, cols: u32, k: i32 }
@group(0) @binding(0) var<storage, read> X: array<u32>;
@group(0) @binding(1) var<storage, read_write> Y: array<u32>;
@group(0) @binding(2) var<uniform> P: Params;
${bitsWgsl('X', dtype)}fn elem(e: u32, part: u32) -> u32 {
  let d = i32(e % P.cols) - i32((e / P.cols) % P.rows);
  return select(0u, bits_X(e, part), d ${upper ? '>=' : '<='} P.k);
}
${LINEAR_MAIN}
  ${storeWordsWgsl('Y', dtype)}
}
`;
}

export const onnxTriluWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args) =>
    args.length === 2 && args[0]!.dtype === args[1]!.dtype && BITS_DTYPES.includes(args[0]!.dtype),
  plan(args, scalars) {
    const x = args[0]!;
    const g = triluGeometry(x, scalars);
    const n = numel(x.shape);
    // k beyond ±(rows + cols) keeps or zeroes everything; clamped so it fits an i32 uniform.
    const k = Math.max(-(g.rows + g.cols), Math.min(g.rows + g.cols, g.k));
    const w = [...words([n, g.rows, g.cols]), { type: 'i32' as const, value: k }];
    return linearStep(triluWgsl(x.dtype, g.upper), wordCount(x.dtype, n), [0, 1], w);
  },
};
