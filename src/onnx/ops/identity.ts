/** Identity and Dropout that keeps every element: a device copy of any dtype, Dropout's mask all true. */
import { fail, make, same } from './util.js';
import type { OpCall, OpImpl } from './types.js';

/**
 * Dropout that keeps every element: inference mode, or training mode with a known ratio of 0 (a random
 * mask otherwise, which is refused). Its mask output is then all true.
 */
function inferenceOnly(c: OpCall): void {
  const training = c.inputs[2];
  const ratio = c.inputs[1];
  // Without a ratio input training mode drops half the elements (ratio 0.5).
  const keepsAll = ratio?.host !== undefined && ratio.host.data[0] === 0;
  if (training && (!training.host || (training.host.data[0] !== 0 && !keepsAll)))
    throw fail(c, 'training-mode Dropout is not supported (inference only)', 'TANDEM_ERR_UNSUPPORTED');
}

const wantsMask = (c: OpCall) => c.node.opType === 'Dropout' && (c.node.outputs[1] ?? '') !== '';

/** Identity and Dropout keeping every element: a device copy of any dtype; the mask a fill of ones. */
function copyImpl(): OpImpl {
  return {
    infer: (c) => {
      inferenceOnly(c);
      return wantsMask(c) ? [same(c), { type: 'bool', dims: same(c).dims }] : [same(c)];
    },
    evaluate: (c, x) => {
      inferenceOnly(c);
      return wantsMask(c)
        ? [x[0]!, make('bool', x[0]!.dims, new Float64Array(x[0]!.data.length).fill(1))]
        : [x[0]!];
    },
    lower: (c, t) => {
      t.submit('copy', { x: t.input(0), y: t.output(0) });
      if (wantsMask(c)) t.submit('fill', { y: t.output(1) }, { value: 1 });
    },
  };
}

export const IDENTITY_OPS: Record<string, OpImpl> = { Identity: copyImpl(), Dropout: copyImpl() };
