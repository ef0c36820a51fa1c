/**
 * embedding_backward: dwte[ids[b, t]] (+)= dy[b, t] over all (b, t), dwpe[t] (+)= Σ_b dy[b, t].
 * Without `accumulate` both tables are overwritten, so rows no id uses (and positions ≥ T) become 0;
 * with it they keep their values. Ids outside [0, V) contribute nothing.
 */
import { bytesPerElement } from '../../core/dtype.js';
import type { AccessMode, KernelDef } from '../kernel.js';
import { checkScalarNames } from '../common/scalars.js';
import { checkArgNames } from '../common/validate.js';
import { accumulateScalar, embeddingShapes } from '../common/norm-checks.js';

export const embeddingBackwardDef: KernelDef = {
  name: 'embedding_backward',
  args: [
    { name: 'ids', mode: 'r' },
    { name: 'dy', mode: 'r' },
    { name: 'dwte', mode: 'rw' },
    { name: 'dwpe', mode: 'rw' },
  ],
  validate(args, scalars) {
    checkArgNames('embedding_backward', embeddingBackwardDef.args, args);
    checkScalarNames('embedding_backward', scalars, ['accumulate']);
    accumulateScalar('embedding_backward', scalars);
    embeddingShapes('embedding_backward', args, 'dy', 'dwte', 'dwpe');
  },
  modes(scalars): Readonly<Record<string, AccessMode>> {
    const mode = accumulateScalar('embedding_backward', scalars) ? 'rw' : 'w';
    return { dwte: mode, dwpe: mode };
  },
  cost(args) {
    const n = args.dy!.shape.reduce((a, b) => a * b, 1);
    const tables = args.dwte!.shape[0]! * args.dwte!.shape[1]! + args.dwpe!.shape[0]! * args.dwpe!.shape[1]!;
    return { flops: 2 * n, bytes: (n + 2 * tables) * bytesPerElement(args.dy!.dtype) };
  },
};
