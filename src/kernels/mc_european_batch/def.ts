/**
 * mc_european_batch: many European options, each with its own terms and seed, priced in one launch.
 * `terms` [options, TERM_COLUMNS] f64 (layout.ts) gives each option's parameters and its first row in
 * `out` [rows, 3] (f32 or f64), where it writes (sum, sum of squares, count) of undiscounted payoffs
 * over contiguous slices of its Philox streams: the rows a one-task mc_european of the same option
 * writes, from the same streams, so a price does not depend on the batch it ran in.
 */
import { TandemError } from '../../core/errors.js';
import type { KernelDef } from '../kernel.js';
import { checkScalarNames } from '../common/scalars.js';
import { checkArgNames, requireRank } from '../common/validate.js';
import { TERM_COLUMNS } from './layout.js';

const OP = 'mc_european_batch';

export const mcEuropeanBatchDef: KernelDef = {
  name: OP,
  args: [
    { name: 'terms', mode: 'r' },
    { name: 'out', mode: 'w' },
  ],
  validate(args, scalars) {
    checkArgNames(OP, this.args, args);
    checkScalarNames(OP, scalars, []);
    const terms = args.terms!;
    const out = args.out!;
    requireRank(OP, 'terms', terms, 2);
    requireRank(OP, 'out', out, 2);
    if (terms.dtype !== 'f64' || terms.shape[1] !== TERM_COLUMNS || terms.shape[0]! < 1) {
      throw new TandemError('TANDEM_ERR_SHAPE', `${OP}: terms must be f64 [options >= 1, ${TERM_COLUMNS}]`, {
        op: OP,
      });
    }
    if (out.shape[1] !== 3 || (out.dtype !== 'f32' && out.dtype !== 'f64')) {
      throw new TandemError('TANDEM_ERR_SHAPE', `${OP}: out must be f32 or f64 [rows, 3]`, { op: OP });
    }
    if (out.shape[0]! < terms.shape[0]!) {
      throw new TandemError('TANDEM_ERR_SHAPE', `${OP}: out needs at least one row per option`, { op: OP });
    }
  },
  cost(args) {
    // The terms do not say the path counts before the run: cost by rows (~1024 streams, 4 paths each).
    const rows = args.out?.shape[0] ?? 1;
    return { flops: rows * 1024 * 80, bytes: rows * 12 };
  },
};
