import { bytesPerElement } from '../../core/dtype.js';
import { numel } from '../../core/shape.js';
import type { Scalars } from '../../devices/device.js';
import type { Cost, KernelDef } from '../kernel.js';
import { checkScalarNames } from '../common/scalars.js';
import { type ArgDescs, checkArgNames, requireFloat, requireSameDType } from '../common/validate.js';
import { requireShape } from '../conv2d/geometry.js';
import { POOL_SCALARS, checkPoolShapes, poolGeometry } from './geometry.js';

/** One compare or add per window element; x read once, y written once. */
export function poolCost(args: ArgDescs, scalars: Scalars, name: string): Cost {
  const g = poolGeometry(args.x!.shape, scalars, name);
  const flops = g.n * g.c * g.ho * g.wo * g.kernel * g.kernel;
  let bytes = 0;
  for (const a in args) bytes += numel(args[a]!.shape) * bytesPerElement(args[a]!.dtype);
  return { flops, bytes };
}

/** y = max or average over each window of x (see geometry.ts for the exact rules). */
export const pool2dDef: KernelDef = {
  name: 'pool2d',
  args: [
    { name: 'x', mode: 'r' },
    { name: 'y', mode: 'w' },
  ],
  validate(args, scalars) {
    checkArgNames('pool2d', pool2dDef.args, args);
    checkScalarNames('pool2d', scalars, POOL_SCALARS);
    requireFloat('pool2d', 'x', args.x!);
    requireSameDType('pool2d', ['x', 'y'], args);
    const g = checkPoolShapes('pool2d', args.x!, scalars);
    requireShape('pool2d', 'y', args.y!, [g.n, g.c, g.ho, g.wo]);
  },
  cost: (args, scalars) => poolCost(args, scalars, 'pool2d'),
};
