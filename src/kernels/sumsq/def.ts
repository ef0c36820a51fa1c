import { bytesPerElement } from '../../core/dtype.js';
import { numel } from '../../core/shape.js';
import type { KernelDef } from '../kernel.js';
import { checkScalarNames } from '../common/scalars.js';
import { checkArgNames, requireFloat } from '../common/validate.js';
import { requireDType, requireScalarTensor } from '../optim_common/grad-transform.js';

/**
 * acc += Σ x² (inf and NaN propagate): one sumsq per gradient into one accumulator gives the squared
 * global norm the optimizer ops clip with and skip on, without a read on the host.
 */
export const sumsqDef: KernelDef = {
  name: 'sumsq',
  args: [
    { name: 'x', mode: 'r' },
    { name: 'acc', mode: 'rw' },
  ],
  validate(args, scalars) {
    checkArgNames('sumsq', sumsqDef.args, args);
    checkScalarNames('sumsq', scalars, []);
    requireFloat('sumsq', 'x', args.x!);
    requireScalarTensor('sumsq', 'acc', args.acc!);
    requireDType('sumsq', 'acc', args.acc!, [args.x!.dtype === 'f64' ? 'f64' : 'f32']);
  },
  cost(args) {
    const n = numel(args.x!.shape);
    return { flops: 2 * n, bytes: n * bytesPerElement(args.x!.dtype) + 2 * bytesPerElement(args.acc!.dtype) };
  },
};
