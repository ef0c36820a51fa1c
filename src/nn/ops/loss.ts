/**
 * Cross-entropy over logits, fused like llm.c's classifier: one kernel computes each row's loss and,
 * when training, overwrites the logits with their gradient (softmax − one-hot, scaled), so the
 * probabilities are never stored. The mean over rows is the loss.
 */
import { TandemError } from '../../core/errors.js';
import type { Nn } from '../context.js';
import type { Var } from '../var.js';
import { requireDtype, requireMatrix, requireShape } from './shapes.js';
import { adoptGrad } from '../grad-routing.js';

/**
 * Mean cross-entropy of `logits` [M, Vp] against `targets` (i32 [M], −1 = ignored row). `vocab` (≤ Vp)
 * is the real class count when the logits are padded (GPT-2's 50257 of 50304). While recording,
 * the logits' values are replaced by their gradient: read them before, or compute them under noGrad.
 * The returned loss must be the value `backward()` is called on.
 */
export function crossEntropy(nn: Nn, logits: Var, targets: Var, vocab?: number): Var {
  const [m, vp] = requireMatrix('crossEntropy', 'logits', logits);
  requireShape('crossEntropy', 'targets', targets, [m]);
  requireDtype('crossEntropy', 'targets', targets, 'i32');
  const v = vocab ?? vp;
  if (!Number.isInteger(v) || v < 1 || v > vp)
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `crossEntropy: vocab must be an integer in 1..${vp}, got ${v}`,
    );
  const training = nn.gradEnabled && logits.requiresGrad;
  const losses = nn.tensor([m], nn.statDtype);
  // d(mean)/d(loss_i) = 1/m, times the loss scale backward() seeds with (a host number, or fp16's
  // device scale: softmax_xent_scaled multiplies by it on the device).
  const scalars = { vocab: v, gradScale: nn.lossScale / m, backward: training };
  const args = { logits: logits.data, targets: targets.data, losses };
  if (nn.lossScaleTensor !== null && training)
    nn.submit('softmax_xent_scaled', { ...args, scale: nn.lossScaleTensor }, scalars);
  else nn.submit('softmax_xent', args, scalars);
  const loss = nn.tensor([1], nn.statDtype);
  nn.submit('reduce', { x: losses, y: loss }, { op: 'mean', all: true });
  nn.free(losses);
  const out = nn.result(loss, [logits], () => {
    if (nn.backwardRoot !== out)
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        'crossEntropy: its loss must be the value backward() is called on (its gradient is computed in the forward pass)',
      );
    adoptGrad(nn, logits, logits.data);
  });
  return out;
}
