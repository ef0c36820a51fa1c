/**
 * LayerNorm over the last axis, alone or fused with the residual sum before it (one pass over the
 * activations instead of two: llm.c's fused_residual_forward). Mean and 1/std are kept for backward.
 */
import type { Tensor } from '../../memory/tensor.js';
import type { Nn } from '../context.js';
import type { Var } from '../var.js';
import { requireMatrix, requireShape } from './shapes.js';
import { gradTarget, jointTargets, shareGrad } from '../grad-routing.js';

const EPS = 1e-5;

interface Saved {
  readonly mean: Tensor;
  readonly rstd: Tensor;
}

function normBackward(nn: Nn, g: Tensor, x: Var, w: Var, b: Var, { mean, rstd }: Saved): void {
  const [m, c] = x.shape as [number, number];
  // dx gets its own target (it accumulates into a residual stream); dw and db share one flag.
  const dx = gradTarget(nn, x);
  const j = jointTargets(nn, [
    { v: w, shape: [c], dtype: w.dtype },
    { v: b, shape: [c], dtype: b.dtype },
  ]);
  const dxTensor = dx?.tensor ?? nn.tensor([m, c]);
  nn.submit(
    'layernorm_backward',
    { dy: g, x: x.data, w: w.data, mean, rstd, dx: dxTensor, dw: j.tensors[0]!, db: j.tensors[1]! },
    { accumulate: j.accumulate, accumulateDx: dx?.accumulate ?? false },
  );
  j.finish();
  if (dx === null) nn.free(dxTensor);
}

export function layerNorm(nn: Nn, x: Var, w: Var, b: Var, eps = EPS): Var {
  const [m, c] = requireMatrix('layerNorm', 'x', x);
  requireShape('layerNorm', 'w', w, [c]);
  requireShape('layerNorm', 'b', b, [c]);
  const y = nn.tensor([m, c]);
  const mean = nn.tensor([m], nn.statDtype);
  const rstd = nn.tensor([m], nn.statDtype);
  nn.submit('layernorm', { x: x.data, w: w.data, b: b.data, y, mean, rstd }, { eps });
  return nn.result(y, [x, w, b], (g) => normBackward(nn, g, x, w, b, { mean, rstd }), [mean, rstd]);
}

/**
 * s = a + r and y = layerNorm(s) in one kernel; returns both (s is the residual stream the next block
 * adds to, y what this block's sublayer reads).
 */
export function residualLayerNorm(nn: Nn, a: Var, r: Var, w: Var, b: Var, eps = EPS): { sum: Var; y: Var } {
  const [m, c] = requireMatrix('residualLayerNorm', 'a', a);
  requireShape('residualLayerNorm', 'r', r, [m, c]);
  requireShape('residualLayerNorm', 'w', w, [c]);
  requireShape('residualLayerNorm', 'b', b, [c]);
  const s = nn.tensor([m, c]);
  const y = nn.tensor([m, c]);
  const mean = nn.tensor([m], nn.statDtype);
  const rstd = nn.tensor([m], nn.statDtype);
  nn.submit('residual_layernorm', { a: a.data, r: r.data, s, w: w.data, b: b.data, y, mean, rstd }, { eps });
  // The sum passes its gradient to both summands unchanged.
  const sum = nn.result(s, [a, r], (g) => {
    shareGrad(nn, g, [a, r]);
  });
  const out = nn.result(y, [sum, w, b], (g) => normBackward(nn, g, sum, w, b, { mean, rstd }), [mean, rstd]);
  return { sum, y: out };
}
