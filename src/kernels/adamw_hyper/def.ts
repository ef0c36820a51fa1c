/**
 * adamw_hyper and adamw_mixed_hyper: adamw and adamw_mixed with the two values a schedule changes every
 * step — the learning rate, the step count and the gradients' scale — read from a device tensor `hyper`
 * (f64: lr, lr/(1 − β1ᵗ), (1 − β2ᵗ)^0.5, gradScale, formed on the host as adamw forms them, or on the
 * device by amp_update) instead of scalars. A training
 * step recorded once (nn's StaticStep, a CUDA graph on the GPU) replays with the next step's values
 * written into `hyper`; the arithmetic is adamw's, bit for bit.
 */
import { numel, shapeStr } from '../../core/shape.js';
import { TandemError } from '../../core/errors.js';
import type { TensorDesc } from '../../devices/device.js';
import type { KernelDef } from '../kernel.js';
import { type ArgDescs, checkArgNames } from '../common/validate.js';
import { optimizerCost } from '../optim_common/cost.js';
import { adamwDef, checkAdamwTensors } from '../adamw/def.js';
import { adamwMixedDef, checkAdamwMixedTensors } from '../adamw_mixed/def.js';
import { HYPER_LENGTH, adamwHyperParams } from '../adamw/params.js';

function requireHyper(op: string, desc: TensorDesc): void {
  if (desc.dtype !== 'f64' || numel(desc.shape) !== HYPER_LENGTH)
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `${op}: hyper must be f64 with ${HYPER_LENGTH} elements (lr, lr/(1-beta1^t), (1-beta2^t)^0.5, gradScale), got ${desc.dtype} ${shapeStr(desc.shape)}`,
      { op, arg: 'hyper' },
    );
}

const HYPER_ARG = { name: 'hyper', mode: 'r' } as const;

/** `base` (adamw or adamw_mixed) with `hyper` after its arguments and without the lr and step scalars. */
function hyperDef(
  base: KernelDef,
  checkTensors: (op: string, args: ArgDescs) => void,
  updated: readonly string[],
): KernelDef {
  const name = `${base.name}_hyper`;
  const def: KernelDef = {
    name,
    args: [...base.args, HYPER_ARG],
    validate(args, scalars) {
      checkArgNames(name, def.args, args);
      adamwHyperParams(name, scalars);
      checkTensors(name, args);
      requireHyper(name, args.hyper!);
    },
    cost: (args) => optimizerCost(args, updated, ['g', 'norm', 'hyper'], 14),
  };
  return def;
}

export const adamwHyperDef = hyperDef(adamwDef, checkAdamwTensors, ['p', 'm', 'v']);
export const adamwMixedHyperDef = hyperDef(adamwMixedDef, checkAdamwMixedTensors, ['master', 'm', 'v', 'p']);
