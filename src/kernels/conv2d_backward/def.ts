import type { Scalars } from '../../devices/device.js';
import type { Cost, KernelDef } from '../kernel.js';
import { boolScalar, checkScalarNames } from '../common/scalars.js';
import { type ArgDescs, checkArgNames, requireFloat, requireSameDType } from '../common/validate.js';
import { convFlops, touchedBytes } from '../conv2d/cost.js';
import { checkConvShapes, requireShape } from '../conv2d/geometry.js';

const OP = 'conv2d_backward';

/** Reads dy, x, w; writes dx, and dw, db (+=) when `accumulate`. Twice the forward's multiply-adds. */
function cost(args: ArgDescs, scalars: Scalars): Cost {
  return { flops: 2 * convFlops(args, scalars, OP), bytes: touchedBytes(args) };
}

/**
 * Gradients of conv2d: dx = dy ⋆ᵀ w (overwritten), dw (+)= dy ⋆ x, db (+)= Σ dy over N, Ho, Wo.
 * `accumulate: false` (default) overwrites dw and db, so they are then written, never read.
 */
export const conv2dBackwardDef: KernelDef = {
  name: OP,
  args: [
    { name: 'dy', mode: 'r' },
    { name: 'x', mode: 'r' },
    { name: 'w', mode: 'r' },
    { name: 'dx', mode: 'w' },
    { name: 'dw', mode: 'rw' },
    { name: 'db', mode: 'rw' },
  ],
  modes: (scalars) => (scalars.accumulate === true ? { dw: 'rw', db: 'rw' } : { dw: 'w', db: 'w' }),
  validate(args, scalars) {
    checkArgNames(OP, conv2dBackwardDef.args, args);
    checkScalarNames(OP, scalars, ['stride', 'padding', 'accumulate']);
    boolScalar(OP, scalars, 'accumulate', false);
    requireFloat(OP, 'dy', args.dy!);
    requireSameDType(OP, ['dy', 'x', 'w', 'dx', 'dw', 'db'], args);
    const g = checkConvShapes(OP, args.x!, args.w!, args.db!, scalars);
    requireShape(OP, 'dy', args.dy!, [g.n, g.o, g.ho, g.wo]);
    requireShape(OP, 'dx', args.dx!, args.x!.shape);
    requireShape(OP, 'dw', args.dw!, args.w!.shape);
  },
  cost,
};
