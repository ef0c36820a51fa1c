/**
 * SGD's scalars (torch/optim/sgd.py `_single_tensor_sgd`): d = g + wd·p; with momentum, the buffer is
 * d itself on the first step and momentum·buf + (1 - dampening)·d afterwards; nesterov uses
 * d + momentum·buf, otherwise buf; then p -= lr·d.
 */
import { TandemError } from '../../core/errors.js';
import type { Scalars } from '../../devices/device.js';
import { boolScalar, checkScalarNames, numberScalar } from '../common/scalars.js';
import {
  GRAD_TRANSFORM_SCALARS,
  type GradTransformScalars,
  gradTransformScalars,
  rangeScalar,
} from '../optim_common/grad-transform.js';

export const SGD_SCALARS: readonly string[] = [
  'lr',
  'momentum',
  'dampening',
  'weightDecay',
  'nesterov',
  'first',
  ...GRAD_TRANSFORM_SCALARS,
];

export interface SgdParams extends GradTransformScalars {
  readonly lr: number;
  readonly momentum: number;
  readonly dampening: number;
  readonly weightDecay: number;
  readonly nesterov: boolean;
  readonly first: boolean;
}

export function sgdParams(op: string, scalars: Scalars): SgdParams {
  checkScalarNames(op, scalars, SGD_SCALARS);
  const params: SgdParams = {
    lr: rangeScalar(op, scalars, 'lr', undefined, 0, Infinity),
    momentum: rangeScalar(op, scalars, 'momentum', 0, 0, Infinity),
    dampening: numberScalar(op, scalars, 'dampening', 0),
    weightDecay: rangeScalar(op, scalars, 'weightDecay', 0, 0, Infinity),
    nesterov: boolScalar(op, scalars, 'nesterov', false),
    first: boolScalar(op, scalars, 'first', false),
    ...gradTransformScalars(op, scalars),
  };
  // torch.optim.SGD's own rule.
  if (params.nesterov && (params.momentum <= 0 || params.dampening !== 0)) {
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `${op}: nesterov momentum requires momentum > 0 and dampening = 0, got momentum ${params.momentum}, dampening ${params.dampening}`,
      { op, scalar: 'nesterov' },
    );
  }
  return params;
}
