import type { CpuKernel } from '../../devices/cpu/kernel-api.js';
import { type FloatArray, forFloatChunks } from '../common/cpu-float.js';
import { enumScalar } from '../common/scalars.js';
import { type UnaryOp, UNARY_FUNCS, UNARY_OPS } from './ops.js';

/** The common ops get their own loop (inlined arithmetic); the rest call the shared function. */
function apply(op: UnaryOp, x: FloatArray, y: FloatArray, n: number): void {
  switch (op) {
    case 'neg':
      for (let i = 0; i < n; i++) y[i] = -x[i]!;
      return;
    case 'square':
      for (let i = 0; i < n; i++) y[i] = x[i]! * x[i]!;
      return;
    case 'relu':
      for (let i = 0; i < n; i++) y[i] = x[i]! < 0 ? 0 : x[i]!;
      return;
    case 'recip':
      for (let i = 0; i < n; i++) y[i] = 1 / x[i]!;
      return;
    case 'exp':
      for (let i = 0; i < n; i++) y[i] = Math.exp(x[i]!);
      return;
    case 'sigmoid':
      for (let i = 0; i < n; i++) y[i] = 1 / (1 + Math.exp(-x[i]!));
      return;
    default: {
      const f = UNARY_FUNCS[op];
      for (let i = 0; i < n; i++) y[i] = f(x[i]!);
    }
  }
}

export const unaryCpu: CpuKernel = (args, scalars) => {
  const op = enumScalar('unary', scalars, 'op', UNARY_OPS);
  forFloatChunks(args, [true, false], [false, true], ([x, y], n) => apply(op, x!, y!, n));
};
