import { TandemError } from '../../core/errors.js';
import { sameShape, shapeStr } from '../../core/shape.js';
import type { KernelDef } from '../kernel.js';
import { checkScalarNames } from '../common/scalars.js';
import { checkArgNames, requireFloat, requireSameDType } from '../common/validate.js';
import { reduceCost } from './cost.js';
import { reduceLayout } from './params.js';

/** y = sum | max | mean of x along one axis, or over all elements (see params.ts for the shape rules). */
export const reduceDef: KernelDef = {
  name: 'reduce',
  args: [
    { name: 'x', mode: 'r' },
    { name: 'y', mode: 'w' },
  ],
  validate(args, scalars) {
    checkArgNames('reduce', reduceDef.args, args);
    checkScalarNames('reduce', scalars, ['op', 'axis', 'all']);
    requireFloat('reduce', 'x', args.x!);
    requireSameDType('reduce', ['x', 'y'], args);
    const layout = reduceLayout(args.x!.shape, scalars);
    const y = args.y!.shape;
    const scalarOk = layout.yShape.length === 1 && layout.yShape[0] === 1 && y.length === 0;
    if (!sameShape(y, layout.yShape) && !scalarOk) {
      throw new TandemError(
        'TANDEM_ERR_SHAPE',
        `reduce: y must have shape ${shapeStr(layout.yShape)} for x ${shapeStr(args.x!.shape)}, got ${shapeStr(y)}`,
        { x: args.x!.shape, y, expected: layout.yShape },
      );
    }
  },
  cost: reduceCost,
};
