/**
 * WGSL for the index ops (index-ops.ts, onehot.ts, gather-nd.ts): onnx_gather_elements,
 * onnx_gather_nd, onnx_argreduce, onnx_hardmax and onnx_onehot, one invocation per output word
 * (webgpu-elements.ts). Gathers and one-hot copy bits, so they take every dtype; argreduce and hardmax
 * compare through orderWgsl (floats, f64 on its words, on order-preserving keys with NaN on the bits:
 * exact on any driver). One-hot's float indices are truncated in f32, so f64 indices are declined. An
 * index outside its axis gives the miss value (NaN, 0 for integers) as on the CPU.
 */
import type { DType } from '../../core/dtype.js';
import { numel } from '../../core/shape.js';
import type { Scalars, TensorDesc } from '../../devices/device.js';
import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
import { LINEAR_MAIN } from '../common/webgpu.js';
import { missingValue, pad6 } from './common.js';
import { gatherNdGeometry } from './gather-nd.js';
import { argGeometry, gatherElementsGeometry } from './index-ops.js';
import { hardmaxGeometry, onehotGeometry } from './onehot.js';
import {
  array6,
  BITS_DTYPES,
  bitsWgsl,
  fields6,
  H2F_WGSL,
  IS_NAN_WGSL,
  isIntDType,
  NUMERIC_DTYPES,
  ORDERED_DTYPES,
  orderWgsl,
  storeWordsWgsl,
  valueWgsl,
  valueWords,
  wordCount,
  words,
} from './webgpu-elements.js';
import { linearStep, u32 } from './webgpu-steps.js';

/** The miss value of `dtype` (NaN, or 0 for integers) as two uniform words. */
function missWords(dtype: DType) {
  return valueWords(dtype, missingValue(dtype));
}

const MISS = 'select(P.miss_lo, P.miss_hi, part == 1u)';

// ---- gather_elements

function gatherElementsWgsl(dtype: DType): string {
  return `struct Params { n: u32, dim: i32, axis: u32, miss_lo: u32, miss_hi: u32, ${fields6('d', 's').join(', ')} }
@group(0) @binding(0) var<storage, read> D: array<u32>;
@group(0) @binding(1) var<storage, read> I: array<i32>;
@group(0) @binding(2) var<storage, read_write> Y: array<u32>;
@group(0) @binding(3) var<uniform> P: Params;
${bitsWgsl('D', dtype)}fn elem(e: u32, part: u32) -> u32 {
  var k = I[e];
  if (k < 0) { k += P.dim; }
  if (k < 0 || k >= P.dim) { return ${MISS}; }
  ${array6('d')}
  ${array6('s')}
  var r = e;
  var o = 0u;
  for (var a = 5; a >= 0; a--) {
    let c = r % d[a];
    r = r / d[a];
    o += select(c, u32(k), u32(a) == P.axis) * s[a];
  }
  return bits_D(o, part);
}
${LINEAR_MAIN}
  ${storeWordsWgsl('Y', dtype)}
}
`;
}

/** data, i32 indices, y of data's dtype: the gathers copy bits, so every dtype whose bits they read. */
function gatherSupports(args: readonly TensorDesc[]): boolean {
  return (
    args.length === 3 &&
    args[0]!.dtype === args[2]!.dtype &&
    args[1]!.dtype === 'i32' &&
    BITS_DTYPES.includes(args[0]!.dtype)
  );
}

export const onnxGatherElementsWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: gatherSupports,
  plan(args, scalars) {
    const [data, indices, y] = [args[0]!, args[1]!, args[2]!];
    const g = gatherElementsGeometry(data, indices, scalars);
    const n = numel(indices.shape);
    const lead = 6 - data.shape.length;
    const w = [
      u32(n),
      { type: 'i32' as const, value: g.dim },
      u32(g.axis + lead),
      ...missWords(y.dtype),
      ...words(pad6(indices.shape, []).dims),
      ...words(pad6(data.shape, g.dataStrides).strides),
    ];
    return linearStep(gatherElementsWgsl(y.dtype), wordCount(y.dtype, n), [0, 1, 2], w);
  },
};

// ---- gather_nd

function gatherNdWgsl(dtype: DType): string {
  return `struct Params { n: u32, m: u32, rows: u32, batch: u32, slice: u32, miss_lo: u32, miss_hi: u32,
  ${fields6('dm', 'st').join(', ')} }
@group(0) @binding(0) var<storage, read> D: array<u32>;
@group(0) @binding(1) var<storage, read> I: array<i32>;
@group(0) @binding(2) var<storage, read_write> Y: array<u32>;
@group(0) @binding(3) var<uniform> P: Params;
${bitsWgsl('D', dtype)}fn elem(e: u32, part: u32) -> u32 {
  ${array6('dm')}
  ${array6('st')}
  let r = e / P.slice;
  var o = (r / P.rows) * P.batch;
  for (var j = 0u; j < P.m; j++) {
    var k = I[r * P.m + j];
    let dim = i32(dm[j]);
    if (k < 0) { k += dim; }
    if (k < 0 || k >= dim) { return ${MISS}; }
    o += u32(k) * st[j];
  }
  return bits_D(o + e % P.slice, part);
}
${LINEAR_MAIN}
  ${storeWordsWgsl('Y', dtype)}
}
`;
}

export const onnxGatherNdWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: gatherSupports,
  plan(args, scalars) {
    const y = args[2]!;
    const g = gatherNdGeometry(args[0]!, args[1]!, scalars);
    const n = numel(g.shape);
    const fill = (v: readonly number[]) => [...v, ...new Array<number>(6 - v.length).fill(0)];
    const w = [
      ...words([n, g.m, Math.max(1, g.rowsPerBatch), g.batchSize, Math.max(1, g.slice)]),
      ...missWords(y.dtype),
      ...words(fill(g.dims)),
      ...words(fill(g.strides)),
    ];
    return linearStep(gatherNdWgsl(y.dtype), wordCount(y.dtype, n), [0, 1, 2], w);
  },
};

// ---- argreduce and hardmax

/**
 * `fn line_best(base: u32) -> u32`: the index along the line (P.dim elements P.inner apart from base)
 * of the maximum (minimum); NaN wins, the first one or with `last` the last one, as index-ops.ts.
 */
function lineBestWgsl(dtype: DType, min: boolean, last: boolean): string {
  // Taken when v comes strictly before best (first index wins) or not after it (last index wins).
  const take = min ? (last ? '!v_lt(best, v)' : 'v_lt(v, best)') : last ? '!v_lt(v, best)' : 'v_lt(best, v)';
  return `${orderWgsl(dtype)}${valueWgsl('X', dtype)}
fn line_best(base: u32) -> u32 {
  var best = val_X(base);
  var at = 0u;
  for (var k = 1u; k < P.dim; k++) {
    let v = val_X(base + k * P.inner);
    var take = false;
    if (v_nan(best)) { take = ${last ? 'v_nan(v)' : 'false'}; }
    else if (v_nan(v)) { take = true; }
    else { take = ${take}; }
    if (take) { best = v; at = k; }
  }
  return at;
}
`;
}

const NUMERIC_BINDINGS = `@group(0) @binding(0) var<storage, read> X: array<u32>;
@group(0) @binding(1) var<storage, read_write> Y: array<u32>;
@group(0) @binding(2) var<uniform> P: Params;`;

export const onnxArgReduceWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args) =>
    args.length === 2 && ORDERED_DTYPES.includes(args[0]!.dtype) && args[1]!.dtype === 'i32',
  plan(args, scalars) {
    const x = args[0]!;
    const g = argGeometry(x, scalars);
    const n = g.outer * g.inner;
    const wgsl = `struct Params { n: u32, dim: u32, inner: u32 }
${NUMERIC_BINDINGS}
${lineBestWgsl(x.dtype, g.op === 'min', g.last)}fn elem(e: u32, part: u32) -> u32 {
  return line_best((e / P.inner) * P.dim * P.inner + e % P.inner);
}
${LINEAR_MAIN}
  ${storeWordsWgsl('Y', 'i32')}
}
`;
    return linearStep(wgsl, n, [0, 1], words([n, g.dim, g.inner]));
  },
};

/** Each output element finds its line's first maximum (O(dim) per element: simple, not fast). */
export const onnxHardmaxWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args) =>
    args.length === 2 && args[0]!.dtype === args[1]!.dtype && ['f32', 'f16', 'bf16'].includes(args[0]!.dtype),
  plan(args, scalars) {
    const x = args[0]!;
    const g = hardmaxGeometry(x, scalars);
    const n = numel(x.shape);
    const wgsl = `struct Params { n: u32, dim: u32, inner: u32, one_lo: u32, one_hi: u32 }
${NUMERIC_BINDINGS}
${lineBestWgsl(x.dtype, false, false)}fn elem(e: u32, part: u32) -> u32 {
  let inn = e % P.inner;
  let k = (e / P.inner) % P.dim;
  let at = line_best((e / (P.inner * P.dim)) * P.dim * P.inner + inn);
  return select(0u, select(P.one_lo, P.one_hi, part == 1u), k == at);
}
${LINEAR_MAIN}
  ${storeWordsWgsl('Y', x.dtype)}
}
`;
    const one = valueWords(x.dtype, 1);
    return linearStep(wgsl, wordCount(x.dtype, n), [0, 1], [...words([n, g.dim, g.inner]), ...one]);
  },
};

// ---- onehot

/** Float indices are truncated and compared in f32: exact while depth stays below 2^24. */
const MAX_FLOAT_DEPTH = 2 ** 24;

function floatDepthFits(shape: readonly number[], scalars: Scalars): boolean {
  try {
    return onehotGeometry({ shape }, scalars).depth < MAX_FLOAT_DEPTH;
  } catch {
    return false; // bad scalars: validation reports them
  }
}

function onehotWgsl(idt: DType, ydt: DType): string {
  const hit = isIntDType(idt)
    ? `var k = val_I(o * P.inner + inn);
  if (k < 0) { k += i32(P.depth); }
  let hit = k == i32(j);`
    : `let v = val_I(o * P.inner + inn);
  var k = trunc(v);
  if (k < 0.0) { k += f32(P.depth); }
  let hit = !is_nan(v) && k == f32(j);`;
  return `struct Params { n: u32, depth: u32, inner: u32, on_lo: u32, on_hi: u32, off_lo: u32, off_hi: u32 }
@group(0) @binding(0) var<storage, read> I: array<u32>;
@group(0) @binding(1) var<storage, read_write> Y: array<u32>;
@group(0) @binding(2) var<uniform> P: Params;
${idt === 'f16' ? H2F_WGSL : ''}${isIntDType(idt) ? '' : IS_NAN_WGSL}${valueWgsl('I', idt)}fn elem(e: u32, part: u32) -> u32 {
  let inn = e % P.inner;
  let j = (e / P.inner) % P.depth;
  let o = e / (P.inner * P.depth);
  ${hit}
  let on = select(P.on_lo, P.on_hi, part == 1u);
  let off = select(P.off_lo, P.off_hi, part == 1u);
  return select(off, on, hit);
}
${LINEAR_MAIN}
  ${storeWordsWgsl('Y', ydt)}
}
`;
}

export const onnxOnehotWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args, scalars) =>
    args.length === 2 &&
    NUMERIC_DTYPES.includes(args[0]!.dtype) &&
    BITS_DTYPES.includes(args[1]!.dtype) &&
    (isIntDType(args[0]!.dtype) || floatDepthFits(args[0]!.shape, scalars)),
  plan(args, scalars) {
    const [indices, y] = [args[0]!, args[1]!];
    const g = onehotGeometry(indices, scalars);
    const n = numel(g.shape);
    const w = [
      ...words([n, g.depth, Math.max(1, g.inner)]),
      ...valueWords(y.dtype, g.on),
      ...valueWords(y.dtype, g.off),
    ];
    return linearStep(onehotWgsl(indices.dtype, y.dtype), wordCount(y.dtype, n), [0, 1], w);
  },
};
