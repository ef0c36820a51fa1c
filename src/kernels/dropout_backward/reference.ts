import type { ReferenceFn } from '../common/reference.js';
import { referenceKeepMask } from '../dropout/reference.js';
import { accumulateScalar, dropoutParams } from '../common/norm-checks.js';

export const dropoutBackwardReference: ReferenceFn = (args, scalars) => {
  const op = 'dropout_backward';
  const dy = args.dy!.values;
  const keep = referenceKeepMask(op, scalars, dy.length);
  const { p } = dropoutParams(op, scalars);
  const acc = accumulateScalar(op, scalars);
  const dx = args.dx!.values;
  return { dx: dy.map((g, i) => (acc ? dx[i]! : 0) + (keep[i] === 1 ? g / (1 - p) : 0)) };
};
