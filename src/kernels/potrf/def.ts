import { bytesPerElement } from '../../core/dtype.js';
import type { KernelDef } from '../kernel.js';
import { checkScalarNames } from '../common/scalars.js';
import { checkArgNames } from '../common/validate.js';
import { requireSquare, requireTileFloat } from '../common/tile.js';

/**
 * Cholesky of one tile, in place: the lower triangle of A becomes L with A = L·Lᵀ (row-major); the
 * strict upper triangle is left as it was. Fails (TANDEM_ERR_KERNEL_FAILED) when A is not positive
 * definite. Backends: cpu (LAPACK potrf), cuda (cuSOLVER potrf, src/kernels/potrf/cuda.ts).
 */
export const potrfDef: KernelDef = {
  name: 'potrf',
  args: [{ name: 'a', mode: 'rw' }],
  validate(args, scalars) {
    checkArgNames('potrf', this.args, args);
    checkScalarNames('potrf', scalars, []);
    requireTileFloat('potrf', 'a', args.a!);
    requireSquare('potrf', 'a', args.a!);
  },
  cost(args) {
    const n = args.a!.shape[0]!;
    return { flops: n ** 3 / 3, bytes: 2 * n * n * bytesPerElement(args.a!.dtype) };
  },
};
