import { TandemError } from '../../core/errors.js';
import type { Scalars } from '../../devices/device.js';
import type { DType } from '../../core/dtype.js';
import type { KernelDef } from '../kernel.js';
import { checkScalarNames, numberScalar } from '../common/scalars.js';
import { checkArgNames } from '../common/validate.js';
import { fillCost } from './cost.js';

const INT_RANGE: Partial<Record<DType, readonly [number, number]>> = {
  i32: [-(2 ** 31), 2 ** 31 - 1],
  u8: [0, 255],
};

/** The fill value, checked against y's dtype: integer tensors take only integers they can hold. */
export function fillValue(scalars: Scalars, dtype: DType): number {
  const value = numberScalar('fill', scalars, 'value');
  const range = INT_RANGE[dtype];
  if (range !== undefined && (!Number.isInteger(value) || value < range[0] || value > range[1])) {
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `fill: value ${value} does not fit ${dtype} (integers in [${range[0]}, ${range[1]}])`,
      { value, dtype },
    );
  }
  return value;
}

/** y = value everywhere; any dtype (f16/bf16 round the value once). */
export const fillDef: KernelDef = {
  name: 'fill',
  args: [{ name: 'y', mode: 'w' }],
  validate(args, scalars) {
    checkArgNames('fill', fillDef.args, args);
    checkScalarNames('fill', scalars, ['value']);
    fillValue(scalars, args.y!.dtype);
  },
  cost: fillCost,
};
