/**
 * Shape checks and dimensions shared by the linear ops (linear, linear_act, linear_dx_act, linear_dw):
 * every tensor is a floating dtype, all of one dtype, matrices are rank 2 and vectors rank 1.
 */
import { TandemError } from '../../core/errors.js';
import { shapeStr } from '../../core/shape.js';
import type { TensorDesc } from '../../devices/device.js';
import { type ArgDescs, requireFloat, requireRank, requireSameDType } from '../common/validate.js';

/** Checks float dtype, one dtype for all of `names`, and the rank of each (2 for matrices, 1 for vectors). */
export function requireLinearArgs(op: string, args: ArgDescs, ranks: Readonly<Record<string, number>>): void {
  const names = Object.keys(ranks);
  for (const name of names) {
    requireFloat(op, name, args[name]!);
    requireRank(op, name, args[name]!, ranks[name]!);
  }
  requireSameDType(op, names, args);
}

/** Throws TANDEM_ERR_SHAPE unless `desc` has exactly `want` (described in terms of the other args). */
export function requireShape(
  op: string,
  name: string,
  desc: TensorDesc,
  want: readonly number[],
  why: string,
): void {
  if (desc.shape.length !== want.length || desc.shape.some((d, i) => d !== want[i])) {
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `${op}: ${name} must be ${shapeStr(want)} (${why}), got ${shapeStr(desc.shape)}`,
      { op, arg: name, shape: desc.shape, expected: [...want] },
    );
  }
}

export interface LinearDims {
  readonly m: number;
  readonly n: number;
  readonly k: number;
}

/** y[m,n] = x[m,k]·w[n,k]ᵀ (+ b[n]): dimensions read from x and w, the rest checked against them. */
export function linearForwardDims(op: string, args: ArgDescs, outputs: readonly string[]): LinearDims {
  const x = args.x!;
  const w = args.w!;
  const [m, k] = x.shape as [number, number];
  const n = w.shape[0]!;
  requireShape(op, 'w', w, [n, k], `x is ${shapeStr(x.shape)}, so w needs k = ${k} columns`);
  requireShape(op, 'b', args.b!, [n], `w has n = ${n} rows`);
  for (const name of outputs) requireShape(op, name, args[name]!, [m, n], `x·wᵀ is ${m} x ${n}`);
  return { m, n, k };
}
