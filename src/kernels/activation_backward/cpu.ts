import type { CpuKernel } from '../../devices/cpu/kernel-api.js';
import { forFloatChunks } from '../common/cpu-float.js';
import { enumScalar } from '../common/scalars.js';
import { ACT_OPS, applyActGrad } from '../activation/ops.js';
import { accumulateOf } from '../linear_dw/def.js';

export const activationBackwardCpu: CpuKernel = (args, scalars) => {
  const op = enumScalar('activation_backward', scalars, 'op', ACT_OPS);
  const accumulate = accumulateOf('activation_backward', scalars);
  forFloatChunks(args, [true, true, accumulate], [false, false, true], ([x, dy, dx], n) =>
    applyActGrad(op, x!, dy!, dx!, n, accumulate),
  );
};
