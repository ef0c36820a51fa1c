/**
 * Host data to and from device tensors: the device dtype of each ONNX element type and the conversions,
 * shared by the planned executor and the control-flow interpreter (control/).
 */
import { fromNumbers, type DType, type HostArray } from '../core/dtype.js';
import { halvesToF32 } from '../core/half.js';
import type { Tensor } from '../memory/tensor.js';
import { isFloatType, roundTo, type ElemType } from './host-tensor.js';
import type { LowerTarget } from './ops/types.js';

/** Float values in the run's float dtype (double in f64), bool/uint8 as u8, other integers as i32. */
export function deviceDType(t: ElemType, floatDType: 'f32' | 'f16' | 'bf16'): DType {
  if (isFloatType(t)) return t === 'double' ? 'f64' : floatDType;
  return t === 'uint8' || t === 'bool' ? 'u8' : 'i32';
}

export function toDevice(data: ArrayLike<number>, dtype: DType): ArrayLike<number> | HostArray {
  if (dtype === 'f32') return Float32Array.from(data);
  if (dtype === 'f64') return data instanceof Float64Array ? data : Float64Array.from(data);
  if (dtype === 'i32')
    return Int32Array.from(data, (v) => roundTo('int32', Math.max(Math.min(v, 2 ** 31 - 1), -(2 ** 31))));
  if (dtype === 'u8') return Uint8Array.from(data);
  const half = new Uint16Array(data.length);
  fromNumbers(dtype, data, half);
  return half;
}

export function fromDevice(data: HostArray, dtype: DType): Float32Array | Float64Array {
  if (data instanceof Float32Array) return data;
  if (data instanceof Float64Array) return data;
  if (dtype === 'f16' || dtype === 'bf16') return halvesToF32(dtype, data as Uint16Array);
  return Float64Array.from(data);
}

/** A node's scratch and constant tensors (LowerTarget's), each pushed on `scratch` to be freed after it. */
export function scratchMakers(
  rt: { tensor(dims: readonly number[], dtype: DType, data?: ArrayLike<number> | HostArray): Tensor },
  scratch: Tensor[],
): Pick<LowerTarget, 'scratch' | 'constant'> {
  const keep = (t: Tensor): Tensor => {
    scratch.push(t);
    return t;
  };
  return {
    scratch: (dims, like) => keep(rt.tensor(dims, like.dtype)),
    constant: (dims, dtype, data) => keep(rt.tensor(dims, dtype, toDevice(data, dtype))),
  };
}
