/**
 * WGSL for the bool-result ops (compare.ts): onnx_compare, onnx_isinf and onnx_where, with u8 (bool)
 * tensors read and written inside u32 words (webgpu-elements.ts). Float comparisons run on
 * order-preserving keys of the bits with NaN tested on the bits, so the 0/1 results are exact on any
 * driver; integers (i32, u8) compare as i32. Where copies bits, so it takes every dtype (f64 too).
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
  IS_NAN_WGSL,
  isIntDType,
  KEY_WGSL,
  NUMERIC_DTYPES,
  offsetWgsl,
  storeWordsWgsl,
  valueWgsl,
  wordCount,
  words,
} from './webgpu-elements.js';
import { linearStep, u32 } from './webgpu-steps.js';

const RELATION: Partial<Record<CompareOp, string>> = {
  equal: '==',
  less: '<',
  less_equal: '<=',
  greater: '>',
  greater_equal: '>=',
};

const LOGIC: Partial<Record<CompareOp, string>> = { and: '&&', or: '||', xor: '!=' };

function compareFn(op: CompareOp, dtype: DType): string {
  const int = isIntDType(dtype);
  const rel = RELATION[op];
  if (rel !== undefined) {
    const body = int ? `p ${rel} q` : `!is_nan(p) && !is_nan(q) && key(p) ${rel} key(q)`;
    return `fn cmp(p: ${int ? 'i32' : 'f32'}, q: ${int ? 'i32' : 'f32'}) -> bool { return ${body}; }
`;
  }
  // Any nonzero value is true, NaN included; −0 is false.
  const nz = int
    ? 'fn nz(v: i32) -> bool { return v != 0; }'
    : 'fn nz(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) != 0u; }';
  return `${nz}
fn cmp(p: ${int ? 'i32' : 'f32'}, q: ${int ? 'i32' : 'f32'}) -> bool { return nz(p) ${LOGIC[op]!} nz(q); }
`;
}

function compareWgsl(op: CompareOp, dtype: DType): string {
  const float = !isIntDType(dtype);
  return `struct Params { n: u32, ${fields6('d', 'sa', 'sb').join(', ')} }
@group(0) @binding(0) var<storage, read> A: array<u32>;
@group(0) @binding(1) var<storage, read> B: array<u32>;
@group(0) @binding(2) var<storage, read_write> C: array<u32>;
@group(0) @binding(3) var<uniform> P: Params;
${dtype === 'f16' ? H2F_WGSL : ''}${float ? IS_NAN_WGSL + KEY_WGSL : ''}${valueWgsl('A', dtype)}${valueWgsl('B', dtype)}${compareFn(op, dtype)}
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
    NUMERIC_DTYPES.includes(args[0]!.dtype) &&
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
