/** unary on CUDA: one grid-stride kernel, the op chosen at compile time (OP), computed in f32 or f64. */
import type { CudaProgram } from '../../devices/cuda/kernel-api.js';
import { BLOCK_DIM, GRID_STRIDE, MATH_OVERLOADS, count, elementwiseGrid } from '../common/cuda.js';
import { enumScalar } from '../common/scalars.js';
import { UNARY_OPS } from './ops.js';

const BODY: Record<(typeof UNARY_OPS)[number], string> = {
  neg: '-v',
  abs: 'm_abs(v)',
  exp: 'm_exp(v)',
  log: 'm_log(v)',
  sqrt: 'm_sqrt(v)',
  relu: 'v < (X_c)0 ? (X_c)0 : v',
  tanh: 'm_tanh(v)',
  sigmoid: '(X_c)1 / ((X_c)1 + m_exp(-v))',
  sin: 'm_sin(v)',
  cos: 'm_cos(v)',
  square: 'v * v',
  recip: '(X_c)1 / v',
};

const CASES = UNARY_OPS.map(
  (op, i) => `#${i === 0 ? 'if' : 'elif'} OP == ${i}\n    X_c r = ${BODY[op]};`,
).join('\n');

export const unaryCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_unary',
  source: `${MATH_OVERLOADS}
extern "C" __global__ void tdm_unary(const X_t* __restrict__ x, X_t* __restrict__ y, long long n) {
  ${GRID_STRIDE} {
    X_c v = ldX(x, i);
${CASES}
#endif
    stX(y, i, r);
  }
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  defines: (_args, scalars) => ({ OP: UNARY_OPS.indexOf(enumScalar('unary', scalars, 'op', UNARY_OPS)) }),
  grid: (args) => elementwiseGrid(count(args[0]!)),
  block: () => BLOCK_DIM,
  params: (args) => [
    { kind: 'ptr', arg: 0 },
    { kind: 'ptr', arg: 1 },
    { kind: 'i64', value: count(args[0]!) },
  ],
};
