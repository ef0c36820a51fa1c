/** Element-wise ops and views: activations, sums, reshapes, dropout. */
import { TandemError } from '../../core/errors.js';
import { numel, shapeStr } from '../../core/shape.js';
import type { Nn } from '../context.js';
import type { Var } from '../var.js';
import type { Activation } from './linear.js';
import { requireShape } from './shapes.js';
import { gradTarget, shareGrad } from '../grad-routing.js';

export function activation(nn: Nn, x: Var, op: Activation): Var {
  const y = nn.tensor(x.shape);
  nn.submit('activation', { x: x.data, y }, { op });
  return nn.result(y, [x], (g) => {
    const dx = gradTarget(nn, x);
    if (dx !== null)
      nn.submit(
        'activation_backward',
        { x: x.data, dy: g, dx: dx.tensor },
        { op, accumulate: dx.accumulate },
      );
  });
}

/** a + b (same shape): a residual connection. */
export function add(nn: Nn, a: Var, b: Var): Var {
  requireShape('add', 'b', b, a.shape);
  const c = nn.tensor(a.shape);
  nn.submit('binary', { a: a.data, b: b.data, c }, { op: 'add' });
  return nn.result(c, [a, b], (g) => {
    // Both inputs receive g itself; only one of them may take it by reference.
    shareGrad(nn, g, [a, b]);
  });
}

/** The same elements in another shape (row-major order kept). */
export function reshape(nn: Nn, x: Var, shape: readonly number[]): Var {
  if (numel(shape) !== x.data.size)
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `reshape: ${shapeStr(x.shape)} has ${x.data.size} elements, ${shapeStr(shape)} has ${numel(shape)}`,
    );
  const y = nn.tensor(shape, x.dtype);
  nn.submit('copy', { x: x.data, y });
  return nn.result(y, [x], (g) => {
    const dx = gradTarget(nn, x);
    if (dx === null) return;
    if (!dx.accumulate) {
      nn.submit('copy', { x: g, y: dx.tensor });
      return;
    }
    const back = nn.tensor(x.shape, x.dtype);
    nn.submit('copy', { x: g, y: back });
    nn.submit('axpy', { x: back, y: dx.tensor }, { alpha: 1 });
    nn.free(back);
  });
}

/** [N, ...] → [N, rest]: what a convolutional stack hands to its classifier. */
export function flatten(nn: Nn, x: Var): Var {
  const n = x.shape[0] ?? 1;
  return reshape(nn, x, [n, x.data.size / n]);
}

/**
 * Inverted dropout with probability p while training (a mask from a counter-based generator, so the
 * backward recomputes it instead of storing it); identity under noGrad or p = 0.
 */
export function dropout(nn: Nn, x: Var, p: number): Var {
  if (!(p >= 0 && p < 1))
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `dropout: p must be in [0, 1), got ${p}`);
  if (p === 0 || !nn.gradEnabled) return x;
  const seed = nn.takeSeed();
  const y = nn.tensor(x.shape);
  nn.submit('dropout', { x: x.data, y }, { p, seed });
  return nn.result(y, [x], (g) => {
    const dx = gradTarget(nn, x);
    if (dx !== null)
      nn.submit('dropout_backward', { dy: g, dx: dx.tensor }, { p, seed, accumulate: dx.accumulate });
  });
}
