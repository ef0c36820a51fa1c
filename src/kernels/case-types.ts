/** The shape of a conformance case (plain data; the cases themselves are in conformance-cases.ts). */
import type { DType } from '../core/dtype.js';
import type { Scalars } from '../devices/device.js';

/**
 * How inputs are drawn: 'signed' ±(0.125..1], 'positive' (0.125..2], 'wide' ±(0.5..300) (to cross
 * integer ranges and saturate), 'int' ±(1..1000) integers, 'byte' 1..255 integers, 'index' integers in
 * [CaseArg.min, CaseArg.max) (token ids, class labels; min defaults to 0, -1 draws ignored targets),
 * 'inf' / 'nan' every element +Infinity / NaN (an overflowed gradient norm: the optimizers' skip).
 */
export type ValueRange = 'signed' | 'positive' | 'wide' | 'int' | 'byte' | 'index' | 'inf' | 'nan';

export interface CaseArg {
  readonly shape: readonly number[];
  readonly dtype: DType;
  /** Defaults: 'signed' for floats, 'int' for i32, 'byte' for u8. */
  readonly range?: ValueRange;
  /** Upper bound (exclusive) for range 'index'. */
  readonly max?: number;
  /** Lower bound (inclusive) for range 'index', default 0 (-1 lets a case draw ignored targets). */
  readonly min?: number;
  /** Exact values instead of random draws (distinct cache positions for kv_append: no write races). */
  readonly values?: readonly number[];
}

export interface ConformanceCase {
  readonly name: string;
  readonly op: string;
  readonly args: Readonly<Record<string, CaseArg>>;
  readonly scalars: Scalars;
  /** An element passes when |got - want| <= atol + rtol * |want|. */
  readonly rtol: number;
  readonly atol: number;
}
