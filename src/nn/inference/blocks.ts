/**
 * The transformer blocks of forward-only GPT-2 (GptInference's scoring and cached passes share them):
 * pre-LN blocks with fused residual + LayerNorm, then the final LayerNorm and the tied LM head on the
 * rows a pass returns.
 */
import type { DType } from '../../core/dtype.js';
import type { Tensor } from '../../memory/tensor.js';
import type { GptConfig } from '../models/gpt.js';
import type { Scope } from './scope.js';

const LN_EPS = 1e-5;

export interface BlockWeights {
  readonly ln1: readonly [Tensor, Tensor];
  readonly attn: readonly [Tensor, Tensor];
  readonly proj: readonly [Tensor, Tensor];
  readonly ln2: readonly [Tensor, Tensor];
  readonly fc: readonly [Tensor, Tensor];
  readonly out: readonly [Tensor, Tensor];
}

/** The tensors a forward pass reads: the model's weights in its precision. */
export interface ModelWeights {
  readonly config: GptConfig;
  readonly dtype: DType;
  readonly wte: Tensor;
  readonly blocks: readonly BlockWeights[];
  readonly lnF: readonly [Tensor, Tensor];
}

/**
 * The transformer blocks over rows x [m, C] (attention given by `attend(qkv, y)`), then the final
 * LayerNorm and the LM head on the rows `last` only: the logits [R, paddedVocab], in the scope.
 */
export function forwardBlocks(
  scope: Scope,
  weights: ModelWeights,
  x0: Tensor,
  m: number,
  index: Tensor,
  attend: (qkv: Tensor, y: Tensor) => void,
): Tensor {
  const c = weights.config;
  const dt = weights.dtype;
  const stat = dt === 'f64' ? 'f64' : 'f32';
  // One buffer per role for all blocks (a block's temporaries are dead once the next one starts; the
  // runtime orders the reuse by the data): a forward's working set is two blocks', not twelve.
  const roles = new Map<string, Tensor>();
  const buffer = (role: string, shape: readonly number[], dtype = dt): Tensor => {
    let t = roles.get(role);
    if (t === undefined) roles.set(role, (t = scope.tensor(shape, dtype)));
    return t;
  };
  let residual = 0; // the residual stream alternates between two buffers (s is never r)
  let x = x0;
  let pending: Tensor | null = null; // a sublayer's output not yet added to the residual stream x
  const norm = (
    rows: number,
    [w, b]: readonly [Tensor, Tensor],
    xIn: Tensor,
    add: Tensor | null,
  ): { x: Tensor; y: Tensor } => {
    const y = buffer(`y${rows}`, [rows, c.width]);
    const mean = buffer(`mean${rows}`, [rows], stat);
    const rstd = buffer(`rstd${rows}`, [rows], stat);
    if (add === null) {
      scope.run('layernorm', { x: xIn, w, b, y, mean, rstd }, { eps: LN_EPS });
      return { x: xIn, y };
    }
    const s = buffer(`s${rows}.${residual++ % 2}`, [rows, c.width]);
    scope.run('residual_layernorm', { a: add, r: xIn, s, w, b, y, mean, rstd }, { eps: LN_EPS });
    return { x: s, y };
  };
  const linear = (input: Tensor, [w, b]: readonly [Tensor, Tensor], role: string, cols: number): Tensor => {
    const y = buffer(role, [m, cols]);
    scope.run('linear', { x: input, w, b, y });
    return y;
  };
  for (const blk of weights.blocks) {
    let r = norm(m, blk.ln1, x, pending);
    x = r.x;
    const qkv = linear(r.y, blk.attn, 'qkv', 3 * c.width);
    const att = buffer('att', [m, c.width]);
    attend(qkv, att);
    pending = linear(att, blk.proj, 'pending', c.width);
    r = norm(m, blk.ln2, x, pending);
    x = r.x;
    const pre = buffer('pre', [m, 4 * c.width]);
    const hidden = buffer('hidden', [m, 4 * c.width]);
    scope.run('linear_act', { x: r.y, w: blk.fc[0], b: blk.fc[1], pre, y: hidden }, { act: 'gelu' });
    pending = linear(hidden, blk.out, 'pending', c.width);
  }
  // Only the wanted rows go on: the residual stream and the last sublayer's output, gathered.
  const rows = index.shape[0]!;
  const gx = scope.tensor([rows, c.width], dt);
  scope.run('gather_rows', { x, index, y: gx });
  let gp: Tensor | null = null;
  if (pending !== null) {
    gp = scope.tensor([rows, c.width], dt);
    scope.run('gather_rows', { x: pending, index, y: gp });
  }
  const h = norm(rows, weights.lnF, gx, gp).y;
  const logits = scope.tensor([rows, c.paddedVocab], dt);
  scope.run('gemm', { a: h, b: weights.wte, c: logits }, { transB: true });
  return logits;
}
