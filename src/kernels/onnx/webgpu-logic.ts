/**
 * WGSL for the bool-result ops (compare.ts): onnx_compare, onnx_isinf and onnx_where, with u8 (bool)
 * tensors read and written inside u32 words (webgpu-elements.ts). Comparisons use orderWgsl: floats
 * (f64 on its two words) on order-preserving keys of the bits with NaN tested on the bits, so the 0/1
 * results are exact on any driver; integers (i32, u8) compare as i32. Where copies bits, so it takes
 * every dtype.
 */
import { numel } from '../../core/shape.js';
import type { DType } from '../../core/dtype.js';
import type { TensorDesc } from '../../devices/device.js';
import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
import { boolScalar, enumScalar } from '../common/scalars.js';
import { LINEAR_MAIN } from '../common/webgpu.js';
import { pad6 } from './common.js';
import { CLASSIFY_OPS, COMPARE_OPS, type CompareOp } from './compare.js';
import { broadcastStrides } from './shapes.js';
import {
  array6,
  BITS_DTYPES,
  bitsWgsl,
  fields6,
  H2F_WGSL,
  offsetWgsl,
  ORDERED_DTYPES,
  orderWgsl,
  storeWordsWgsl,
  valueType,
  valueWgsl,
  wordCount,
  words,
} from './webgpu-elements.js';
import { linearStep, u32 } from './webgpu-steps.js';

/** Each op on values p, q (orderWgsl's functions; comparisons with NaN are false). */
const COMPARE_WGSL: Record<CompareOp, string> = {
  equal: 'v_eq(p, q)',
  less: 'v_lt(p, q)',
  less_equal: 'v_lt(p, q) || v_eq(p, q)',
  greater: 'v_lt(q, p)',
  greater_equal: 'v_lt(q, p) || v_eq(p, q)',
  and: 'v_nz(p) && v_nz(q)',
  or: 'v_nz(p) || v_nz(q)',
  xor: 'v_nz(p) != v_nz(q)',
};

function compareFn(op: CompareOp, dtype: DType): string {
  const t = valueType(dtype);
  const logic = op === 'and' || op === 'or' || op === 'xor';
  const body = logic ? COMPARE_WGSL[op] : `!v_nan(p) && !v_nan(q) && (${COMPARE_WGSL[op]})`;
  return `fn cmp(p: ${t}, q: ${t}) -> bool { return ${body}; }
`;
}

function compareWgsl(op: CompareOp, dtype: DType): string {
  return `struct Params { n: u32, ${fields6('d', 'sa', 'sb').join(', ')} }
@group(0) @binding(0) var<storage, read> A: array<u32>;
@group(0) @binding(1) var<storage, read> B: array<u32>;
@group(0) @binding(2) var<storage, read_write> C: array<u32>;
@group(0) @binding(3) var<uniform> P: Params;
${orderWgsl(dtype)}${valueWgsl('A', dtype)}${valueWgsl('B', dtype)}${compareFn(op, dtype)}
fn elem(e: u32, part: u32) -> u32 {
  ${array6('d')}
  ${array6('sa')}
  ${array6('sb')}
  ${offsetWgsl('e', ['sa', 'sb'])}
  return select(0u, 1u, cmp(val_A(o_sa), val_B(o_sb)));
}
${LINEAR_MAIN}
  ${storeWordsWgsl('C', 'u8')}
}
`;
}

/** Output dims, then each operand's broadcast strides, as u32 words (strides are never negative here). */
function broadcastWords(out: readonly number[], operands: readonly TensorDesc[]) {
  const dims = pad6(out, []).dims;
  return words([...dims, ...operands.flatMap((t) => pad6(out, broadcastStrides(t.shape, out)).strides)]);
}

export const onnxCompareWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args) =>
    args.length === 3 &&
    args[0]!.dtype === args[1]!.dtype &&
    ORDERED_DTYPES.includes(args[0]!.dtype) &&
    args[2]!.dtype === 'u8',
  plan(args, scalars) {
    const op = enumScalar('onnx_compare', scalars, 'op', COMPARE_OPS);
    const c = args[2]!;
    const n = numel(c.shape);
    const w = [u32(n), ...broadcastWords(c.shape, [args[0]!, args[1]!])];
    return linearStep(compareWgsl(op, args[0]!.dtype), wordCount('u8', n), [0, 1, 2], w);
  },
};

// ---- isinf / isnan

/** 1 where the element is NaN (isnan) or an enabled infinity (isinf); f64 tested on its two words. */
function isInfWgsl(dtype: DType, isNan: boolean, pos: boolean, neg: boolean): string {
  const read =
    dtype === 'f64'
      ? `let hi = X[2u * e + 1u];
  let lo = X[2u * e];
  let mag = hi & 0x7fffffffu;
  let inf = mag == 0x7ff00000u && lo == 0u;
  let nan = mag > 0x7ff00000u || (mag == 0x7ff00000u && lo != 0u);
  let neg = (hi & 0x80000000u) != 0u;`
      : `let b = bitcast<u32>(val_X(e));
  let mag = b & 0x7fffffffu;
  let inf = mag == 0x7f800000u;
  let nan = mag > 0x7f800000u;
  let neg = (b & 0x80000000u) != 0u;`;
  const sides = pos ? (neg ? 'true' : '!neg') : neg ? 'neg' : 'false';
  const reader = dtype === 'f64' ? '' : `${dtype === 'f16' ? H2F_WGSL : ''}${valueWgsl('X', dtype)}`;
  return `struct Params { n: u32 }
@group(0) @binding(0) var<storage, read> X: array<u32>;
@group(0) @binding(1) var<storage, read_write> Y: array<u32>;
@group(0) @binding(2) var<uniform> P: Params;
${reader}fn elem(e: u32, part: u32) -> u32 {
  ${read}
  return select(0u, 1u, ${isNan ? 'nan' : `inf && (${sides})`});
}
${LINEAR_MAIN}
  ${storeWordsWgsl('Y', 'u8')}
}
`;
}

export const onnxIsInfWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args) =>
    args.length === 2 && ['f32', 'f64', 'f16', 'bf16'].includes(args[0]!.dtype) && args[1]!.dtype === 'u8',
  plan(args, scalars) {
    const op = enumScalar('onnx_isinf', scalars, 'op', CLASSIFY_OPS);
    const pos = boolScalar('onnx_isinf', scalars, 'detectPositive', true);
    const neg = boolScalar('onnx_isinf', scalars, 'detectNegative', true);
    const n = numel(args[0]!.shape);
    const wgsl = isInfWgsl(args[0]!.dtype, op === 'isnan', pos, neg);
    return linearStep(wgsl, wordCount('u8', n), [0, 1], [u32(n)]);
  },
};

// ---- where

function whereWgsl(dtype: DType): string {
  return `struct Params { n: u32, ${fields6('d', 'sk', 'sx', 'sy').join(', ')} }
@group(0) @binding(0) var<storage, read> K: array<u32>;
@group(0) @binding(1) var<storage, read> X: array<u32>;
@group(0) @binding(2) var<storage, read> Y: array<u32>;
@group(0) @binding(3) var<storage, read_write> Z: array<u32>;
@group(0) @binding(4) var<uniform> P: Params;
${bitsWgsl('K', 'u8')}${bitsWgsl('X', dtype)}${bitsWgsl('Y', dtype)}fn elem(e: u32, part: u32) -> u32 {
  ${array6('d')}
  ${array6('sk')}
  ${array6('sx')}
  ${array6('sy')}
  ${offsetWgsl('e', ['sk', 'sx', 'sy'])}
  return select(bits_Y(o_sy, part), bits_X(o_sx, part), bits_K(o_sk, 0u) != 0u);
}
${LINEAR_MAIN}
  ${storeWordsWgsl('Z', dtype)}
}
`;
}

export const onnxWhereWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args) =>
    args.length === 4 &&
    args[0]!.dtype === 'u8' &&
    BITS_DTYPES.includes(args[3]!.dtype) &&
    args[1]!.dtype === args[3]!.dtype &&
    args[2]!.dtype === args[3]!.dtype,
  plan(args) {
    const z = args[3]!;
    const n = numel(z.shape);
    const w = [u32(n), ...broadcastWords(z.shape, [args[0]!, args[1]!, args[2]!])];
    return linearStep(whereWgsl(z.dtype), wordCount(z.dtype, n), [0, 1, 2, 3], w);
  },
};
