/**
 * Causal multi-head self-attention over a fused q|k|v projection (GPT-2's layout), one kernel forward
 * and one backward (flash-style on CUDA: the T×T scores are never stored; the log-sum-exp per row is).
 */
import { TandemError } from '../../core/errors.js';
import type { Nn } from '../context.js';
import type { Var } from '../var.js';

/** qkv [B, T, 3C] → y [B, T, C]. */
export function causalSelfAttention(nn: Nn, qkv: Var, heads: number): Var {
  if (qkv.shape.length !== 3 || qkv.shape[2]! % 3 !== 0)
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `attention: qkv must be [batch, time, 3·width], got [${qkv.shape.join(', ')}]`,
    );
  const [b, t, c3] = qkv.shape as [number, number, number];
  const c = c3 / 3;
  if (!Number.isInteger(heads) || heads < 1 || c % heads !== 0)
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `attention: width ${c} is not divisible by ${heads} heads`,
    );
  const y = nn.tensor([b, t, c]);
  const lse = nn.tensor([b, heads, t], nn.statDtype);
  nn.submit('attention', { qkv: qkv.data, y, lse }, { heads });
  const out = nn.result(
    y,
    [qkv],
    (g) => {
      if (!qkv.requiresGrad) return;
      const d = nn.overwriteTarget(qkv);
      nn.submit('attention_backward', { dy: g, qkv: qkv.data, y, lse, dqkv: d.tensor }, { heads });
      d.finish();
    },
    [lse],
  );
  return out;
}
