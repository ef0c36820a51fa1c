/**
 * Causal multi-head self-attention over a fused q|k|v projection (GPT-2's layout), one kernel forward
 * and one backward (flash-style on CUDA: the T×T scores are never stored; the log-sum-exp per row is).
 */
import { TandemError } from '../../core/errors.js';
import type { Nn } from '../context.js';
import type { Var } from '../var.js';
import { overwriteTarget } from '../grad-routing.js';

/**
 * qkv [B, T, 3C] → y [B, T, C]; or, with `seq` = T, the rows of a linear layer qkv [B·T, 3C] → y
 * [B·T, C] (no reshape copies on either side).
 */
export function causalSelfAttention(nn: Nn, qkv: Var, heads: number, seq?: number): Var {
  const rows = qkv.shape.length === 2 && seq !== undefined;
  if ((!rows && qkv.shape.length !== 3) || qkv.shape[qkv.shape.length - 1]! % 3 !== 0)
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `attention: qkv must be [batch, time, 3·width] (or [batch·time, 3·width] with seq), got [${qkv.shape.join(', ')}]`,
    );
  if (rows && (!Number.isInteger(seq) || seq < 1 || qkv.shape[0]! % seq !== 0))
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `attention: ${qkv.shape[0]} rows are not a whole number of sequences of ${seq}`,
    );
  const [b, t, c3] = rows
    ? [qkv.shape[0]! / seq, seq, qkv.shape[1]!]
    : (qkv.shape as [number, number, number]);
  const c = c3 / 3;
  if (!Number.isInteger(heads) || heads < 1 || c % heads !== 0)
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `attention: width ${c} is not divisible by ${heads} heads`,
    );
  const y = nn.tensor(rows ? [b * t, c] : [b, t, c]);
  const lse = nn.tensor([b, heads, t], nn.statDtype);
  const scalars: Record<string, number> = rows ? { heads, seq: t } : { heads };
  nn.submit('attention', { qkv: qkv.data, y, lse }, scalars);
  const out = nn.result(
    y,
    [qkv],
    (g) => {
      if (!qkv.requiresGrad) return;
      const d = overwriteTarget(nn, qkv);
      nn.submit('attention_backward', { dy: g, qkv: qkv.data, y, lse, dqkv: d.tensor }, scalars);
      d.finish();
    },
    [lse],
  );
  return out;
}
