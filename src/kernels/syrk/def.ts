import { bytesPerElement } from '../../core/dtype.js';
import { TandemError } from '../../core/errors.js';
import type { KernelDef } from '../kernel.js';
import { checkScalarNames, numberScalar } from '../common/scalars.js';
import { checkArgNames, requireSameDType } from '../common/validate.js';
import { requireSquare, requireTileFloat } from '../common/tile.js';

/**
 * Symmetric rank-k update of the lower triangle: C := beta·C + alpha·A·Aᵀ, A n x k, C n x n
 * (row-major; the strict upper triangle of C is not touched). Defaults alpha = 1, beta = 1; the
 * Cholesky update uses alpha = -1. Backends: cpu (BLAS syrk), cuda (cuBLAS syrk, src/kernels/syrk/cuda.ts).
 */
export const syrkDef: KernelDef = {
  name: 'syrk',
  args: [
    { name: 'a', mode: 'r' },
    { name: 'c', mode: 'rw' },
  ],
  validate(args, scalars) {
    checkArgNames('syrk', this.args, args);
    checkScalarNames('syrk', scalars, ['alpha', 'beta']);
    numberScalar('syrk', scalars, 'alpha', 1);
    numberScalar('syrk', scalars, 'beta', 1);
    requireTileFloat('syrk', 'a', args.a!);
    requireTileFloat('syrk', 'c', args.c!);
    requireSameDType('syrk', ['a', 'c'], args);
    const n = requireSquare('syrk', 'c', args.c!);
    if (args.a!.shape[0] !== n) {
      throw new TandemError(
        'TANDEM_ERR_SHAPE',
        `syrk: a must have ${n} rows like c, got ${args.a!.shape[0]}`,
      );
    }
  },
  cost(args) {
    const n = args.c!.shape[0]!;
    const k = args.a!.shape[1]!;
    const es = bytesPerElement(args.c!.dtype);
    return { flops: n * n * k, bytes: es * (n * k + 2 * n * n) };
  },
};
