import type { CpuKernel } from '../../devices/cpu/kernel-api.js';
import { type FloatArray, forFloatChunks } from '../common/cpu-float.js';
import { enumScalar } from '../common/scalars.js';
import { type BinaryOp, BINARY_FUNCS, BINARY_OPS } from './ops.js';

/** Arithmetic ops get their own loop (inlined); max/min/pow call the shared function. */
function apply(op: BinaryOp, a: FloatArray, b: FloatArray, c: FloatArray, n: number): void {
  switch (op) {
    case 'add':
      for (let i = 0; i < n; i++) c[i] = a[i]! + b[i]!;
      return;
    case 'sub':
      for (let i = 0; i < n; i++) c[i] = a[i]! - b[i]!;
      return;
    case 'mul':
      for (let i = 0; i < n; i++) c[i] = a[i]! * b[i]!;
      return;
    case 'div':
      for (let i = 0; i < n; i++) c[i] = a[i]! / b[i]!;
      return;
    default: {
      const f = BINARY_FUNCS[op];
      for (let i = 0; i < n; i++) c[i] = f(a[i]!, b[i]!);
    }
  }
}

export const binaryCpu: CpuKernel = (args, scalars) => {
  const op = enumScalar('binary', scalars, 'op', BINARY_OPS);
  forFloatChunks(args, [true, true, false], [false, false, true], ([a, b, c], n) => apply(op, a!, b!, c!, n));
};
