/**
 * softmax_xent: the fused classifier loss. logits [.., Vp] with the real vocabulary in the first
 * `vocab` = V columns (V ≤ Vp; the rest is padding), targets i32 (logits' shape without the last axis),
 * losses (same shape, f32; f64 for f64 logits):
 *   losses[i] = logsumexp(logits[i, :V]) − logits[i, t]
 * With `backward` (default) the gradient replaces the logits in place, probabilities never stored:
 *   logits[i, j] := (softmax_j − [j = t])·gradScale for j < V, 0 for j ≥ V.
 * t = −1 (ignored): loss 0 and a zero gradient row. t outside [−1, V): loss NaN and a NaN gradient
 * over the first V columns (padding still 0), so a bad label cannot go unnoticed.
 */
import { bytesPerElement } from '../../core/dtype.js';
import { TandemError } from '../../core/errors.js';
import type { Scalars, TensorDesc } from '../../devices/device.js';
import type { AccessMode, KernelDef } from '../kernel.js';
import { boolScalar, checkScalarNames, intScalar, numberScalar } from '../common/scalars.js';
import { checkArgNames } from '../common/validate.js';
import { requireDType, requireShape, rowsOf, statDType } from '../common/norm-checks.js';

export interface XentParams {
  readonly rows: number;
  /** Row length in memory (Vp). */
  readonly padded: number;
  /** Real vocabulary V ≤ Vp. */
  readonly vocab: number;
  readonly gradScale: number;
  readonly backward: boolean;
}

export function xentParams(logits: TensorDesc, scalars: Scalars): XentParams {
  const op = 'softmax_xent';
  const { rows, cols } = rowsOf(op, 'logits', logits);
  const vocab = intScalar(op, scalars, 'vocab', cols);
  if (vocab < 1 || vocab > cols) {
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `${op}: vocab must be in [1, ${cols}] (the logits' last axis), got ${vocab}`,
      { op },
    );
  }
  return {
    rows,
    padded: cols,
    vocab,
    gradScale: numberScalar(op, scalars, 'gradScale', 1),
    backward: boolScalar(op, scalars, 'backward', true),
  };
}

export const softmaxXentDef: KernelDef = {
  name: 'softmax_xent',
  args: [
    { name: 'logits', mode: 'rw' },
    { name: 'targets', mode: 'r' },
    { name: 'losses', mode: 'w' },
  ],
  validate(args, scalars) {
    const op = 'softmax_xent';
    checkArgNames(op, softmaxXentDef.args, args);
    checkScalarNames(op, scalars, ['vocab', 'gradScale', 'backward']);
    const logits = args.logits!;
    xentParams(logits, scalars);
    const lead = logits.shape.slice(0, -1);
    requireDType(op, 'targets', args.targets!, 'i32');
    requireShape(op, 'targets', args.targets!, lead);
    requireDType(op, 'losses', args.losses!, statDType(logits.dtype));
    requireShape(op, 'losses', args.losses!, lead);
  },
  modes(scalars): Readonly<Record<string, AccessMode>> {
    return { logits: boolScalar('softmax_xent', scalars, 'backward', true) ? 'rw' : 'r' };
  },
  cost(args, scalars) {
    const p = xentParams(args.logits!, scalars);
    const n = p.rows * p.padded;
    const e = bytesPerElement(args.logits!.dtype);
    // Two reads of every row (max/sum, then loss and gradient), one write with backward.
    return { flops: 6 * n, bytes: (p.backward ? 3 : 1) * n * e + 8 * p.rows };
  },
};
