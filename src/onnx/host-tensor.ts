/**
 * Host tensors of the loader: initializers, constants, folded shape values and the float64 evaluator's
 * values. Every numeric element type is held as float64 (exact for every ONNX type but int64/uint64
 * beyond 2^53, which appear only as "to the end" sentinels such as Slice's INT64_MAX, where rounding
 * does not change the meaning).
 */
import { TandemError } from '../core/errors.js';

/** ONNX element types by their TensorProto.DataType number. */
export const ELEM_TYPES = {
  1: 'float',
  2: 'uint8',
  3: 'int8',
  4: 'uint16',
  5: 'int16',
  6: 'int32',
  7: 'int64',
  8: 'string',
  9: 'bool',
  10: 'float16',
  11: 'double',
  12: 'uint32',
  13: 'uint64',
  14: 'complex64',
  15: 'complex128',
  16: 'bfloat16',
} as const;
export type ElemType = (typeof ELEM_TYPES)[keyof typeof ELEM_TYPES];

export const FLOAT_TYPES: ReadonlySet<ElemType> = new Set(['float', 'double', 'float16', 'bfloat16']);

export function elemTypeOf(code: number, where: string): ElemType {
  const t = (ELEM_TYPES as Record<number, ElemType | undefined>)[code];
  if (t === undefined) {
    throw new TandemError('TANDEM_ERR_BAD_DATA', `onnx: ${where} has unknown element type ${code}`, {
      reason: 'dtype',
      code,
    });
  }
  return t;
}

export function elemTypeCode(t: ElemType): number {
  for (const [k, v] of Object.entries(ELEM_TYPES)) if (v === t) return Number(k);
  return 0;
}

export interface HostTensor {
  readonly type: ElemType;
  readonly dims: readonly number[];
  readonly data: Float64Array;
}

export function numelOf(dims: readonly number[]): number {
  let n = 1;
  for (const d of dims) n *= d;
  return n;
}

export function hostTensor(type: ElemType, dims: readonly number[], data: ArrayLike<number>): HostTensor {
  const n = numelOf(dims);
  if (data.length !== n) {
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `onnx: a tensor of shape [${dims.join(', ')}] needs ${n} elements, got ${data.length}`,
    );
  }
  return { type, dims: [...dims], data: data instanceof Float64Array ? data : Float64Array.from(data) };
}

/** Rounds values to what the element type can hold (float32 rounding, integer truncation, bool). */
export function roundTo(type: ElemType, x: number): number {
  switch (type) {
    case 'float':
    case 'float16':
    case 'bfloat16':
      return Math.fround(x);
    case 'bool':
      return x !== 0 ? 1 : 0;
    case 'double':
      return x;
    case 'int8':
      return wrapInt(x, 8, true);
    case 'uint8':
      return wrapInt(x, 8, false);
    case 'int16':
      return wrapInt(x, 16, true);
    case 'uint16':
      return wrapInt(x, 16, false);
    case 'int32':
      return wrapInt(x, 32, true);
    case 'uint32':
      return wrapInt(x, 32, false);
    default:
      return Number.isFinite(x) ? Math.trunc(x) : x;
  }
}

function wrapInt(x: number, bits: number, signed: boolean): number {
  if (!Number.isFinite(x)) return 0;
  const m = 2 ** bits;
  let v = Math.trunc(x) % m;
  if (v < 0) v += m;
  if (signed && v >= m / 2) v -= m;
  return v;
}

export const isFloatType = (t: ElemType): boolean => FLOAT_TYPES.has(t);
