import { bytesPerElement, isFloat } from '../../core/dtype.js';
import { TandemError } from '../../core/errors.js';
import { numel, shapeStr } from '../../core/shape.js';
import type { KernelDef } from '../kernel.js';
import { checkArgNames } from '../common/validate.js';
import { imageNormalizeParams } from './params.js';

/** y (float, N×3×H×W) = normalized x (u8, N×H×W×3): params.ts. */
export const imageNormalizeDef: KernelDef = {
  name: 'image_normalize',
  args: [
    { name: 'x', mode: 'r' },
    { name: 'y', mode: 'w' },
  ],
  validate(args, scalars) {
    const op = 'image_normalize';
    checkArgNames(op, imageNormalizeDef.args, args);
    imageNormalizeParams(op, scalars);
    const x = args.x!;
    const y = args.y!;
    if (x.dtype !== 'u8')
      throw new TandemError('TANDEM_ERR_DTYPE', `${op}: x must be u8 pixels, got ${x.dtype}`, {
        op,
        arg: 'x',
      });
    if (!isFloat(y.dtype))
      throw new TandemError('TANDEM_ERR_DTYPE', `${op}: y must be a float dtype, got ${y.dtype}`, {
        op,
        arg: 'y',
      });
    const [n, h, w, c] = x.shape;
    if (x.shape.length !== 4 || c !== 3)
      throw new TandemError('TANDEM_ERR_SHAPE', `${op}: x must be [N, H, W, 3], got ${shapeStr(x.shape)}`, {
        op,
        arg: 'x',
      });
    const want = [n!, 3, h!, w!];
    if (y.shape.length !== 4 || want.some((d, i) => y.shape[i] !== d))
      throw new TandemError(
        'TANDEM_ERR_SHAPE',
        `${op}: y must be ${shapeStr(want)} for x ${shapeStr(x.shape)}, got ${shapeStr(y.shape)}`,
        { op, arg: 'y' },
      );
  },
  cost: (args) => {
    const n = numel(args.x!.shape);
    return { flops: 2 * n, bytes: n * (1 + bytesPerElement(args.y!.dtype)) };
  },
};
