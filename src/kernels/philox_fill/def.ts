/**
 * philox_fill: the raw Philox4x32-10 words of streams [first, first + n), block `block`, key (k0, k1)
 * into `out` i32 [n, 4] (bit patterns). It exists to prove that every backend generates the same
 * stream bit for bit (the conformance test compares them) and to let users draw reproducible bits.
 */
import { TandemError } from '../../core/errors.js';
import type { Scalars } from '../../devices/device.js';
import type { KernelDef } from '../kernel.js';
import { checkScalarNames, intScalar } from '../common/scalars.js';
import { checkArgNames } from '../common/validate.js';

export function readPhiloxScalars(s: Scalars): { first: number; block: number; k0: number; k1: number } {
  const op = 'philox_fill';
  return {
    first: intScalar(op, s, 'first', 0),
    block: intScalar(op, s, 'block', 0),
    k0: intScalar(op, s, 'k0'),
    k1: intScalar(op, s, 'k1', 0),
  };
}

export const philoxFillDef: KernelDef = {
  name: 'philox_fill',
  args: [{ name: 'out', mode: 'w' }],
  validate(args, scalars) {
    checkArgNames('philox_fill', this.args, args);
    checkScalarNames('philox_fill', scalars, ['first', 'block', 'k0', 'k1']);
    const s = readPhiloxScalars(scalars);
    const out = args.out!;
    if (out.dtype !== 'i32' || out.shape.length !== 2 || out.shape[1] !== 4) {
      throw new TandemError('TANDEM_ERR_SHAPE', 'philox_fill: out must be i32 [n, 4]', { op: 'philox_fill' });
    }
    for (const [k, v] of Object.entries(s)) {
      if (v < 0 || v >= 2 ** 32)
        throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `philox_fill: ${k} must be a u32`, {
          op: 'philox_fill',
        });
    }
    if (s.first + out.shape[0]! > 2 ** 32)
      throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', 'philox_fill: streams must stay below 2^32');
  },
  cost: (args) => ({ flops: args.out!.shape[0]! * 60, bytes: args.out!.shape[0]! * 16 }),
};
