import type { KernelDef } from '../kernel.js';
import { checkScalarNames } from '../common/scalars.js';
import { checkArgNames, requireFloat, requireSameDType } from '../common/validate.js';
import { conv2dCost } from './cost.js';
import { checkConvShapes, requireShape } from './geometry.js';

/** y = cross-correlation(x, w) + b, NCHW (PyTorch's Conv2d, groups 1, dilation 1). */
export const conv2dDef: KernelDef = {
  name: 'conv2d',
  args: [
    { name: 'x', mode: 'r' },
    { name: 'w', mode: 'r' },
    { name: 'b', mode: 'r' },
    { name: 'y', mode: 'w' },
  ],
  validate(args, scalars) {
    checkArgNames('conv2d', conv2dDef.args, args);
    checkScalarNames('conv2d', scalars, ['stride', 'padding']);
    requireFloat('conv2d', 'x', args.x!);
    requireSameDType('conv2d', ['x', 'w', 'b', 'y'], args);
    const g = checkConvShapes('conv2d', args.x!, args.w!, args.b!, scalars);
    requireShape('conv2d', 'y', args.y!, [g.n, g.o, g.ho, g.wo]);
  },
  cost: conv2dCost,
};
