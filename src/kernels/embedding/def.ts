/**
 * embedding: y[b, t] = wte[ids[b, t]] + wpe[t] (GPT-2's token plus position embedding). An id outside
 * [0, V) reads nothing and gives a NaN row, so a bad token shows up in the loss instead of reading
 * another tensor's memory.
 */
import { bytesPerElement } from '../../core/dtype.js';
import { numel } from '../../core/shape.js';
import type { KernelDef } from '../kernel.js';
import { checkScalarNames } from '../common/scalars.js';
import { checkArgNames } from '../common/validate.js';
import { embeddingShapes } from '../common/norm-checks.js';

export const embeddingDef: KernelDef = {
  name: 'embedding',
  args: [
    { name: 'ids', mode: 'r' },
    { name: 'wte', mode: 'r' },
    { name: 'wpe', mode: 'r' },
    { name: 'y', mode: 'w' },
  ],
  validate(args, scalars) {
    checkArgNames('embedding', embeddingDef.args, args);
    checkScalarNames('embedding', scalars, []);
    embeddingShapes('embedding', args, 'y', 'wte', 'wpe');
  },
  cost(args) {
    const n = numel(args.y!.shape);
    const rows = numel(args.ids!.shape);
    return { flops: n, bytes: 3 * n * bytesPerElement(args.y!.dtype) + 4 * rows };
  },
};
