import type { Scalars } from '../../devices/device.js';
import type { ReferenceFn } from '../common/reference.js';
import { u32ToUniform } from '../mc_common/philox.js';
import { dropoutParams } from '../common/norm-checks.js';
import { forDropoutWords } from './mask.js';

/**
 * The mask from the definition itself: u = (2(word >>> 9) + 1)·2⁻²⁴ compared with p in float64 (not the
 * integer threshold the kernels use), so a test that compares the two proves the threshold right.
 */
export function referenceKeepMask(op: string, scalars: Scalars, n: number): Uint8Array {
  const { p, seed, offset } = dropoutParams(op, scalars);
  const keep = new Uint8Array(n);
  forDropoutWords(seed, offset, n, (i, word) => {
    keep[i] = u32ToUniform(word) >= p ? 1 : 0;
  });
  return keep;
}

export const dropoutReference: ReferenceFn = (args, scalars) => {
  const x = args.x!.values;
  const keep = referenceKeepMask('dropout', scalars, x.length);
  const { p } = dropoutParams('dropout', scalars);
  return { y: x.map((v, i) => (keep[i] === 1 ? v / (1 - p) : 0)) };
};
