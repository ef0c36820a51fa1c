import { shapeStr } from '../../core/shape.js';
import type { Scalars } from '../../devices/device.js';
import type { KernelDef } from '../kernel.js';
import { boolScalar, checkScalarNames } from '../common/scalars.js';
import { checkArgNames } from '../common/validate.js';
import { elementSize, linearCost } from '../linear/cost.js';
import { requireLinearArgs, requireShape } from '../linear/shapes.js';

export function accumulateOf(op: string, scalars: Scalars): boolean {
  return boolScalar(op, scalars, 'accumulate', false);
}

/**
 * dw (+)= dyᵀ·x and db (+)= Σ_rows dy (cuBLASLt's BGRADB epilogue): the weight and bias gradients of
 * linear. dy [m,n], x [m,k], dw [n,k], db [n]; `accumulate` adds to the old dw/db instead of overwriting.
 */
export const linearDwDef: KernelDef = {
  name: 'linear_dw',
  args: [
    { name: 'dy', mode: 'r' },
    { name: 'x', mode: 'r' },
    { name: 'dw', mode: 'rw' },
    { name: 'db', mode: 'rw' },
  ],
  // Without accumulate the old gradients are never read, so the runtime need not bring them over.
  modes: (scalars) => {
    const mode = scalars.accumulate === true ? 'rw' : 'w';
    return { dw: mode, db: mode };
  },
  validate(args, scalars) {
    checkArgNames('linear_dw', linearDwDef.args, args);
    checkScalarNames('linear_dw', scalars, ['accumulate']);
    accumulateOf('linear_dw', scalars);
    requireLinearArgs('linear_dw', args, { dy: 2, x: 2, dw: 2, db: 1 });
    const [m, n] = args.dy!.shape as [number, number];
    const k = args.x!.shape[1]!;
    const dy = shapeStr(args.dy!.shape);
    requireShape('linear_dw', 'x', args.x!, [m, k], `dy is ${dy}, so x needs m = ${m} rows`);
    requireShape('linear_dw', 'dw', args.dw!, [n, k], `dyᵀ·x is ${n} x ${k}`);
    requireShape('linear_dw', 'db', args.db!, [n], `dy has n = ${n} columns`);
  },
  cost(args, scalars) {
    const [m, n] = args.dy!.shape as [number, number];
    const k = args.x!.shape[1]!;
    const outs = (n * k + n) * (scalars.accumulate === true ? 2 : 1);
    return linearCost({ m: n, n: k, k: m }, elementSize(args, 'dw'), m * n + m * k + outs, 0);
  },
};
