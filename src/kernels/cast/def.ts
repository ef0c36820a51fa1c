import { TandemError } from '../../core/errors.js';
import type { KernelDef } from '../kernel.js';
import { checkScalarNames } from '../common/scalars.js';
import { checkArgNames, requireSameShape } from '../common/validate.js';
import { castCost } from './cost.js';
import { CAST_DTYPES } from './convert.js';

/** y = x converted to y's dtype (rules in convert.ts); same shape, dtypes among f32 f64 f16 bf16 i32 u8. */
export const castDef: KernelDef = {
  name: 'cast',
  args: [
    { name: 'x', mode: 'r' },
    { name: 'y', mode: 'w' },
  ],
  validate(args, scalars) {
    checkArgNames('cast', castDef.args, args);
    checkScalarNames('cast', scalars, []);
    for (const name of ['x', 'y'] as const) {
      const dtype = args[name]!.dtype;
      if (!CAST_DTYPES.includes(dtype)) {
        throw new TandemError(
          'TANDEM_ERR_DTYPE',
          `cast: ${name} has dtype ${dtype}; cast supports ${CAST_DTYPES.join(', ')}`,
        );
      }
    }
    requireSameShape('cast', ['x', 'y'], args);
  },
  cost: castCost,
};
