/**
 * The value a cast stores, before rounding to a float dtype. Float to integer truncates toward zero and
 * saturates at the integer type's range, with NaN -> 0: what CUDA's cvt.rzi.sat and WGSL's conversions
 * do, so every backend can agree.
 */
import type { DType } from '../../core/dtype.js';

export const CAST_DTYPES: readonly DType[] = ['f32', 'f64', 'f16', 'bf16', 'i32', 'u8'];

const I32_MIN = -(2 ** 31);
const I32_MAX = 2 ** 31 - 1;

export function saturateI32(v: number): number {
  return v !== v ? 0 : v <= I32_MIN ? I32_MIN : v >= I32_MAX ? I32_MAX : Math.trunc(v);
}

export function saturateU8(v: number): number {
  return v !== v ? 0 : v <= 0 ? 0 : v >= 255 ? 255 : Math.trunc(v);
}

export function castValue(dst: DType, v: number): number {
  if (dst === 'i32') return saturateI32(v);
  if (dst === 'u8') return saturateU8(v);
  return v;
}
