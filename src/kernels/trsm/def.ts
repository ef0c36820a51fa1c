import { bytesPerElement } from '../../core/dtype.js';
import { TandemError } from '../../core/errors.js';
import type { KernelDef } from '../kernel.js';
import { checkScalarNames } from '../common/scalars.js';
import { checkArgNames, requireSameDType } from '../common/validate.js';
import { requireSquare, requireTileFloat } from '../common/tile.js';

/**
 * The Cholesky panel solve: B := B · L⁻ᵀ with L the lower triangle of the n x n tile A, B m x n
 * (row-major). Backends: cpu (BLAS trsm), cuda (cuBLAS trsm, src/kernels/trsm/cuda.ts).
 */
export const trsmDef: KernelDef = {
  name: 'trsm',
  args: [
    { name: 'a', mode: 'r' },
    { name: 'b', mode: 'rw' },
  ],
  validate(args, scalars) {
    checkArgNames('trsm', this.args, args);
    checkScalarNames('trsm', scalars, []);
    requireTileFloat('trsm', 'a', args.a!);
    requireTileFloat('trsm', 'b', args.b!);
    requireSameDType('trsm', ['a', 'b'], args);
    const n = requireSquare('trsm', 'a', args.a!);
    if (args.b!.shape[1] !== n) {
      throw new TandemError(
        'TANDEM_ERR_SHAPE',
        `trsm: b must have ${n} columns like a, got ${args.b!.shape[1]}`,
      );
    }
  },
  cost(args) {
    const n = args.a!.shape[0]!;
    const m = args.b!.shape[0]!;
    const es = bytesPerElement(args.a!.dtype);
    return { flops: m * n * n, bytes: es * (n * n + 2 * m * n) };
  },
};
