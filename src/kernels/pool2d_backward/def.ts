import type { KernelDef } from '../kernel.js';
import { checkScalarNames } from '../common/scalars.js';
import { checkArgNames, requireFloat, requireSameDType } from '../common/validate.js';
import { requireShape } from '../conv2d/geometry.js';
import { poolCost } from '../pool2d/def.js';
import { POOL_SCALARS, checkPoolShapes } from '../pool2d/geometry.js';

const OP = 'pool2d_backward';

/**
 * dx = the gradient of pool2d (same scalars): max sends each window's dy to its first maximum in x,
 * avg spreads dy/kernel² over the window's elements inside x; overlapping windows add up.
 */
export const pool2dBackwardDef: KernelDef = {
  name: OP,
  args: [
    { name: 'x', mode: 'r' },
    { name: 'dy', mode: 'r' },
    { name: 'dx', mode: 'w' },
  ],
  validate(args, scalars) {
    checkArgNames(OP, pool2dBackwardDef.args, args);
    checkScalarNames(OP, scalars, POOL_SCALARS);
    requireFloat(OP, 'x', args.x!);
    requireSameDType(OP, ['x', 'dy', 'dx'], args);
    const g = checkPoolShapes(OP, args.x!, scalars);
    requireShape(OP, 'dy', args.dy!, [g.n, g.c, g.ho, g.wo]);
    requireShape(OP, 'dx', args.dx!, args.x!.shape);
  },
  cost: (args, scalars) => poolCost(args, scalars, OP),
};
