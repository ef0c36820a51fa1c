/**
 * activation_backward on CUDA: dx (+)= op′(x) ⊙ dy, one grid-stride kernel (ACT and ACC chosen at
 * compile time). dx may be the same memory as dy (linear_dx_act's fallback runs it in place on dy·w),
 * so the pointers are not __restrict__; each thread reads its element before writing it.
 */
import type { CudaProgram } from '../../devices/cuda/kernel-api.js';
import { BLOCK_DIM, GRID_STRIDE, count, elementwiseGrid } from '../common/cuda.js';
import { enumScalar } from '../common/scalars.js';
import { ACT_SOURCE, actIndex } from '../activation/cuda-source.js';
import { ACT_OPS } from '../activation/ops.js';
import { accumulateOf } from '../linear_dw/def.js';

/** The program with ACT/ACC given directly, for callers whose scalars are named differently. */
export function activationGradProgram(op: string, actScalar: string): CudaProgram {
  return {
    kind: 'program',
    entry: 'tdm_activation_backward',
    source: `${ACT_SOURCE}
extern "C" __global__ void tdm_activation_backward(const X_t* x, const X_t* dy, X_t* dx, long long n) {
  ${GRID_STRIDE} {
    const X_c v = ldX(x, i);
    const X_c g = ldX(dy, i);
#if ACT == 1
    X_c r = v > (X_c)0 ? g : (X_c)0;
#else
    X_c r = tdm_act_grad(v) * g;
#endif
#if ACC
    r = r + ldX(dx, i);
#endif
    stX(dx, i, r);
  }
}`,
    dtypes: (args) => ({ X: args[0]!.desc.dtype }),
    defines: (_args, scalars) => ({
      ACT: actIndex(enumScalar(op, scalars, actScalar, ACT_OPS)),
      ACC: scalars.accumulate === true ? 1 : 0,
    }),
    grid: (args) => elementwiseGrid(count(args[0]!)),
    block: () => BLOCK_DIM,
    params: (args, scalars) => {
      accumulateOf(op, scalars);
      return [
        { kind: 'ptr', arg: 0 },
        { kind: 'ptr', arg: 1 },
        { kind: 'ptr', arg: 2 },
        { kind: 'i64', value: count(args[0]!) },
      ];
    },
  };
}

export const activationBackwardCuda: CudaProgram = activationGradProgram('activation_backward', 'op');
