/**
 * Definitions of the MD ops: md_neighbors (wrap positions, build the fixed-capacity Verlet list),
 * lj_forces (forces, per-atom energy and virial) and md_integrate (velocity-Verlet stages).
 * The box and cutoffs travel as scalars; see fixed.ts for the list layout.
 */
import { TandemError } from '../../core/errors.js';
import { numel } from '../../core/shape.js';
import type { Scalars, TensorDesc } from '../../devices/device.js';
import type { KernelDef } from '../kernel.js';
import { boolScalar, checkScalarNames, intScalar, numberScalar } from '../common/scalars.js';
import { checkArgNames } from '../common/validate.js';
import type { Box3 } from './fixed.js';

export function boxOf(op: string, s: Scalars): Box3 {
  return { lx: numberScalar(op, s, 'lx'), ly: numberScalar(op, s, 'ly'), lz: numberScalar(op, s, 'lz') };
}

function bad(op: string, msg: string): TandemError {
  return new TandemError('TANDEM_ERR_SHAPE', `${op}: ${msg}`, { op });
}

function atomsOf(op: string, x: TensorDesc): number {
  if (x.shape.length !== 2 || x.shape[1] !== 3) throw bad(op, 'x must be [n, 3]');
  if (x.dtype !== 'f32' && x.dtype !== 'f64')
    throw new TandemError('TANDEM_ERR_DTYPE', `${op}: positions must be f32 or f64`, { op });
  return x.shape[0]!;
}

function requireLike(op: string, name: string, d: TensorDesc, shape: readonly number[], dtype: string): void {
  if (d.dtype !== dtype || d.shape.length !== shape.length || d.shape.some((v, i) => v !== shape[i])) {
    throw bad(op, `${name} must be ${dtype} [${shape.join(', ')}], got ${d.dtype} [${d.shape.join(', ')}]`);
  }
}

function checkList(op: string, n: number, nbr: TensorDesc, ncount: TensorDesc): void {
  if (nbr.dtype !== 'i32' || nbr.shape.length !== 2 || numel(nbr.shape) % n !== 0)
    throw bad(op, 'nbr must be i32 [n, cap] or [cap, n]');
  requireLike(op, 'ncount', ncount, [n], 'i32');
}

const BOX = ['lx', 'ly', 'lz'];

export const mdNeighborsDef: KernelDef = {
  name: 'md_neighbors',
  args: [
    { name: 'x', mode: 'rw' },
    { name: 'nbr', mode: 'w' },
    { name: 'ncount', mode: 'w' },
    { name: 'meta', mode: 'w' },
  ],
  validate(args, scalars) {
    const op = 'md_neighbors';
    checkArgNames(op, this.args, args);
    checkScalarNames(op, scalars, [...BOX, 'range', 'half', 'transposed']);
    const n = atomsOf(op, args.x!);
    checkList(op, n, args.nbr!, args.ncount!);
    requireLike(op, 'meta', args.meta!, [2], 'i32');
    const box = boxOf(op, scalars);
    const range = numberScalar(op, scalars, 'range');
    if (!(range > 0) || 2 * range > Math.min(box.lx, box.ly, box.lz)) {
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `${op}: range must be in (0, half the smallest box side]`,
        { op },
      );
    }
  },
  cost(args) {
    const n = args.x!.shape[0]!;
    return { flops: n * 27 * 20 * 8, bytes: numel(args.nbr!.shape) * 4 + n * 40 };
  },
};

export const ljForcesDef: KernelDef = {
  name: 'lj_forces',
  args: [
    { name: 'x', mode: 'r' },
    { name: 'nbr', mode: 'r' },
    { name: 'ncount', mode: 'r' },
    { name: 'f', mode: 'w' },
    { name: 'ev', mode: 'w' },
  ],
  validate(args, scalars) {
    const op = 'lj_forces';
    checkArgNames(op, this.args, args);
    checkScalarNames(op, scalars, [...BOX, 'cutoff', 'shift', 'half', 'transposed']);
    const n = atomsOf(op, args.x!);
    checkList(op, n, args.nbr!, args.ncount!);
    requireLike(op, 'f', args.f!, [n, 3], args.x!.dtype);
    requireLike(op, 'ev', args.ev!, [n, 2], args.x!.dtype);
    boxOf(op, scalars);
    numberScalar(op, scalars, 'cutoff');
  },
  cost(args) {
    const pairs = numel(args.nbr!.shape);
    return { flops: pairs * 23, bytes: pairs * 16 + args.x!.shape[0]! * 48 };
  },
};

export const mdIntegrateDef: KernelDef = {
  name: 'md_integrate',
  args: [
    { name: 'x', mode: 'rw' },
    { name: 'v', mode: 'rw' },
    { name: 'f', mode: 'r' },
  ],
  validate(args, scalars) {
    const op = 'md_integrate';
    checkArgNames(op, this.args, args);
    checkScalarNames(op, scalars, ['dt', 'stage']);
    const n = atomsOf(op, args.x!);
    requireLike(op, 'v', args.v!, [n, 3], args.x!.dtype);
    requireLike(op, 'f', args.f!, [n, 3], args.x!.dtype);
    numberScalar(op, scalars, 'dt');
    const stage = intScalar(op, scalars, 'stage');
    if (stage !== 1 && stage !== 2)
      throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `${op}: stage must be 1 or 2`, { op });
  },
  cost(args) {
    const n = args.x!.shape[0]!;
    return { flops: n * 12, bytes: n * 3 * 5 * (args.x!.dtype === 'f64' ? 8 : 4) };
  },
};

export function listFlags(op: string, s: Scalars): { half: boolean; transposed: boolean } {
  return { half: boolScalar(op, s, 'half', false), transposed: boolScalar(op, s, 'transposed', false) };
}
