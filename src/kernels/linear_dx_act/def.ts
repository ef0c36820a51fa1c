import { shapeStr } from '../../core/shape.js';
import type { KernelDef } from '../kernel.js';
import { checkScalarNames, enumScalar } from '../common/scalars.js';
import { type ArgDescs, checkArgNames } from '../common/validate.js';
import { ACT_OPS } from '../activation/ops.js';
import { elementSize, linearCost } from '../linear/cost.js';
import { type LinearDims, requireLinearArgs, requireShape } from '../linear/shapes.js';

/** m, n from dy [m,n]; k from w [n,k]; pre and dx must be [m,k]. */
export function linearDxDims(args: ArgDescs): LinearDims {
  const [m, n] = args.dy!.shape as [number, number];
  const k = args.w!.shape[1]!;
  return { m, n, k };
}

/**
 * dx = act′(pre) ⊙ (dy·w): the gradient at the previous layer's pre-activation, given the gradient dy
 * of this layer's output (cuBLASLt's DGELU epilogue). dy [m,n], w [n,k], pre and dx [m,k].
 */
export const linearDxActDef: KernelDef = {
  name: 'linear_dx_act',
  args: [
    { name: 'dy', mode: 'r' },
    { name: 'w', mode: 'r' },
    { name: 'pre', mode: 'r' },
    { name: 'dx', mode: 'w' },
  ],
  validate(args, scalars) {
    checkArgNames('linear_dx_act', linearDxActDef.args, args);
    checkScalarNames('linear_dx_act', scalars, ['act']);
    enumScalar('linear_dx_act', scalars, 'act', ACT_OPS);
    requireLinearArgs('linear_dx_act', args, { dy: 2, w: 2, pre: 2, dx: 2 });
    const { m, n, k } = linearDxDims(args);
    const dy = shapeStr(args.dy!.shape);
    requireShape('linear_dx_act', 'w', args.w!, [n, k], `dy is ${dy}, so w needs n = ${n} rows`);
    requireShape('linear_dx_act', 'pre', args.pre!, [m, k], `dy·w is ${m} x ${k}`);
    requireShape('linear_dx_act', 'dx', args.dx!, [m, k], `dy·w is ${m} x ${k}`);
  },
  cost(args) {
    const { m, n, k } = linearDxDims(args);
    return linearCost({ m, n: k, k: n }, elementSize(args, 'dx'), m * n + n * k + 2 * m * k, 10);
  },
};
