/**
 * softmax_xent_scaled: softmax_xent whose gradient is also multiplied by the value of a device tensor
 * `scale` (f64, one element) — fp16's loss scale, which amp_update changes on the device, so the host
 * never reads it to seed the next step. Everything else is softmax_xent's (def.ts).
 */
import { numel, shapeStr } from '../../core/shape.js';
import { TandemError } from '../../core/errors.js';
import type { CpuKernel } from '../../devices/cpu/kernel-api.js';
import type { Scalars } from '../../devices/device.js';
import type { KernelDef } from '../kernel.js';
import { numberScalar } from '../common/scalars.js';
import type { ReferenceFn } from '../common/reference.js';
import { checkArgNames } from '../common/validate.js';
import { softmaxXentDef } from './def.js';
import { softmaxXentCpu } from './cpu.js';
import { softmaxXentReference } from './reference.js';

const OP = 'softmax_xent_scaled';

export const softmaxXentScaledDef: KernelDef = {
  ...softmaxXentDef,
  name: OP,
  args: [...softmaxXentDef.args, { name: 'scale', mode: 'r' }],
  validate(args, scalars) {
    checkArgNames(OP, softmaxXentScaledDef.args, args);
    const { scale, ...base } = args;
    softmaxXentDef.validate(base, scalars);
    if (scale!.dtype !== 'f64' || numel(scale!.shape) !== 1)
      throw new TandemError(
        'TANDEM_ERR_SHAPE',
        `${OP}: scale must be f64 with one element, got ${scale!.dtype} ${shapeStr(scale!.shape)}`,
        { op: OP, arg: 'scale' },
      );
  },
};

/** The gradient factor: the gradScale scalar times the scale tensor's value (one double product). */
export function scaledScalars(scalars: Scalars, scale: number): Scalars {
  return { ...scalars, gradScale: numberScalar(OP, scalars, 'gradScale', 1) * scale };
}

export const softmaxXentScaledCpu: CpuKernel = (args, scalars, ctx) =>
  softmaxXentCpu(args.slice(0, 3), scaledScalars(scalars, args[3]!.data[0]!), ctx);

export const softmaxXentScaledReference: ReferenceFn = (args, scalars) => {
  const { scale, ...base } = args;
  return softmaxXentReference(base, scaledScalars(scalars, scale!.values[0]!));
};
