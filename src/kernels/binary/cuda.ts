/** binary on CUDA: c = a op b element-wise (same shapes), the op chosen at compile time. */
import type { CudaProgram } from '../../devices/cuda/kernel-api.js';
import { BLOCK_DIM, GRID_STRIDE, MATH_OVERLOADS, count, elementwiseGrid } from '../common/cuda.js';
import { enumScalar } from '../common/scalars.js';
import { BINARY_OPS } from './ops.js';

const BODY: Record<(typeof BINARY_OPS)[number], string> = {
  add: 'a + b',
  sub: 'a - b',
  mul: 'a * b',
  div: 'a / b',
  max: 'm_max(a, b)',
  min: 'm_min(a, b)',
  pow: 'm_pow(a, b)',
};

const CASES = BINARY_OPS.map(
  (op, i) => `#${i === 0 ? 'if' : 'elif'} OP == ${i}\n    X_c r = ${BODY[op]};`,
).join('\n');

export const binaryCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_binary',
  source: `${MATH_OVERLOADS}
extern "C" __global__ void tdm_binary(const X_t* __restrict__ pa, const X_t* __restrict__ pb, X_t* __restrict__ pc, long long n) {
  ${GRID_STRIDE} {
    X_c a = ldX(pa, i);
    X_c b = ldX(pb, i);
${CASES}
#endif
    stX(pc, i, r);
  }
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  defines: (_args, scalars) => ({ OP: BINARY_OPS.indexOf(enumScalar('binary', scalars, 'op', BINARY_OPS)) }),
  grid: (args) => elementwiseGrid(count(args[0]!)),
  block: () => BLOCK_DIM,
  params: (args) => [
    { kind: 'ptr', arg: 0 },
    { kind: 'ptr', arg: 1 },
    { kind: 'ptr', arg: 2 },
    { kind: 'i64', value: count(args[0]!) },
  ],
};
