/** Token + position embedding (GPT-2): y[b·T + t] = wte[ids[b, t]] + wpe[t], as rows [B·T, C]. */
import { TandemError } from '../../core/errors.js';
import type { Nn } from '../context.js';
import type { Var } from '../var.js';
import { requireDtype, requireMatrix } from './shapes.js';
import { jointTargets } from '../grad-routing.js';

export function embedding(nn: Nn, ids: Var, wte: Var, wpe: Var): Var {
  requireDtype('embedding', 'ids', ids, 'i32');
  if (ids.shape.length !== 2)
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `embedding: ids must be [batch, time], got rank ${ids.shape.length}`,
    );
  const [b, t] = ids.shape as [number, number];
  const [, c] = requireMatrix('embedding', 'wte', wte);
  const [p] = requireMatrix('embedding', 'wpe', wpe, c);
  if (t > p)
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `embedding: sequence length ${t} exceeds the ${p} positions of wpe`,
    );
  const y = nn.tensor([b * t, c]);
  nn.submit('embedding', { ids: ids.data, wte: wte.data, wpe: wpe.data, y });
  const out = nn.result(y, [wte, wpe], (g) => {
    const j = jointTargets(nn, [
      { v: wte, shape: wte.shape, dtype: wte.dtype },
      { v: wpe, shape: wpe.shape, dtype: wpe.dtype },
    ]);
    nn.submit(
      'embedding_backward',
      { ids: ids.data, dy: g, dwte: j.tensors[0]!, dwpe: j.tensors[1]! },
      { accumulate: j.accumulate },
    );
    j.finish();
  });
  return out;
}
