/** The shape of a float64 reference implementation, shared by tests and the conformance runner. */
import type { Scalars, TensorDesc } from '../../devices/device.js';

export interface RefArg {
  readonly desc: TensorDesc;
  /** Element values decoded to numbers (exactly what the stored dtype holds). */
  readonly values: Float64Array;
}

/** Returns the exact (float64) result for every argument the op writes, keyed by argument name. */
export type ReferenceFn = (
  args: Readonly<Record<string, RefArg>>,
  scalars: Scalars,
) => Record<string, Float64Array>;
