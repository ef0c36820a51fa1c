import { TandemError } from '../../core/errors.js';
import { shapeStr } from '../../core/shape.js';
import type { KernelDef } from '../kernel.js';
import { checkScalarNames } from '../common/scalars.js';
import { checkArgNames, requireFloat, requireRank, requireSameDType } from '../common/validate.js';
import { gemmCost } from './cost.js';
import { GEMM_SCALARS, gemmDims, gemmParams } from './params.js';

/** C = alpha * op(A) * op(B) + beta * C, row-major; op(X) = X or its transpose. */
export const gemmDef: KernelDef = {
  name: 'gemm',
  args: [
    { name: 'a', mode: 'r' },
    { name: 'b', mode: 'r' },
    { name: 'c', mode: 'rw' },
  ],
  // With beta = 0 the old C is never read, so the runtime need not bring it to the device.
  modes: (scalars) => ({ c: scalars.beta === undefined || scalars.beta === 0 ? 'w' : 'rw' }),
  validate(args, scalars) {
    checkArgNames('gemm', gemmDef.args, args);
    checkScalarNames('gemm', scalars, GEMM_SCALARS);
    const p = gemmParams(scalars);
    const { a, b, c } = args as Required<typeof args>;
    for (const [name, d] of [
      ['a', a],
      ['b', b],
      ['c', c],
    ] as const) {
      requireFloat('gemm', name, d!);
      requireRank('gemm', name, d!, 2);
    }
    requireSameDType('gemm', ['a', 'b', 'c'], args);
    if (p.precision === 'tf32' && c!.dtype !== 'f32') {
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `gemm: precision "tf32" applies to f32 only, got ${c!.dtype}`,
      );
    }
    const { m, n, k } = gemmDims(a!, b!, p);
    const kb = p.transB ? b!.shape[1]! : b!.shape[0]!;
    const opA = `a${p.transA ? 'ᵀ' : ''} ${shapeStr(a!.shape)}`;
    const opB = `b${p.transB ? 'ᵀ' : ''} ${shapeStr(b!.shape)}`;
    if (k !== kb) {
      throw new TandemError(
        'TANDEM_ERR_SHAPE',
        `gemm: inner sizes differ: ${opA} has k=${k}, ${opB} has k=${kb}`,
        {
          a: a!.shape,
          b: b!.shape,
        },
      );
    }
    if (c!.shape[0] !== m || c!.shape[1] !== n) {
      throw new TandemError(
        'TANDEM_ERR_SHAPE',
        `gemm: c must be [${m}, ${n}] for ${opA} x ${opB}, got ${shapeStr(c!.shape)}`,
        { c: c!.shape, expected: [m, n] },
      );
    }
  },
  cost: gemmCost,
};
