import { numel, shapeStr } from '../../core/shape.js';
import { TandemError } from '../../core/errors.js';
import type { TensorDesc } from '../../devices/device.js';
import type { KernelDef } from '../kernel.js';
import { checkArgNames } from '../common/validate.js';
import { requireScalarTensor } from '../optim_common/grad-transform.js';
import { HYPER_LENGTH } from '../adamw/params.js';
import { ampParams } from './params.js';

function requireF64(op: string, name: string, desc: TensorDesc, length: number, what: string): void {
  if (desc.dtype !== 'f64' || numel(desc.shape) !== length)
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `${op}: ${name} must be f64 with ${length} element${length === 1 ? '' : 's'} (${what}), got ${desc.dtype} ${shapeStr(desc.shape)}`,
      { op, arg: name },
    );
}

/** fp16's loss scale, growth tracker and optimizer step count updated on the device (params.ts). */
export const ampUpdateDef: KernelDef = {
  name: 'amp_update',
  args: [
    { name: 'norm', mode: 'r' },
    { name: 'scale', mode: 'rw' },
    { name: 'state', mode: 'rw' },
    { name: 'hyper', mode: 'rw' },
    { name: 'lr', mode: 'r' },
  ],
  validate(args, scalars) {
    const op = 'amp_update';
    checkArgNames(op, ampUpdateDef.args, args);
    ampParams(op, scalars);
    requireScalarTensor(op, 'norm', args.norm!);
    requireF64(op, 'scale', args.scale!, 1, 'the loss scale');
    requireF64(op, 'state', args.state!, 2, 'growth tracker, optimizer steps');
    requireF64(op, 'hyper', args.hyper!, HYPER_LENGTH, 'lr, lr/(1-beta1^t), (1-beta2^t)^0.5, gradScale');
    requireF64(op, 'lr', args.lr!, 1, "the step's learning rate");
  },
  cost: () => ({ flops: 32, bytes: 8 * (2 * (1 + 2 + 4) + 2) }),
};
