/**
 * Fully connected layers: y = act(x·wᵀ + b). With a bias the forward is one fused kernel (cuBLASLt
 * bias/GELU epilogues on CUDA); the backward is the activation's derivative, dx = dpre·w and the fused
 * dw/db kernel. Without a bias, the runtime's gemm.
 */
import type { Tensor } from '../../memory/tensor.js';
import type { Nn } from '../context.js';
import type { Var } from '../var.js';
import { requireMatrix } from './shapes.js';
import { gradTarget, jointTargets } from '../grad-routing.js';

export type Activation = 'gelu' | 'relu';

export function linear(nn: Nn, x: Var, w: Var, b: Var | null, act?: Activation): Var {
  const [m, k] = requireMatrix('linear', 'x', x);
  const [n] = requireMatrix('linear', 'w', w, k);
  const y = nn.tensor([m, n]);
  let pre: Tensor | null = null;
  if (b !== null && act !== undefined) {
    pre = nn.tensor([m, n]);
    nn.submit('linear_act', { x: x.data, w: w.data, b: b.data, pre, y }, { act });
  } else if (b !== null) {
    nn.submit('linear', { x: x.data, w: w.data, b: b.data, y });
  } else if (act !== undefined) {
    pre = nn.tensor([m, n]);
    nn.submit('gemm', { a: x.data, b: w.data, c: pre }, { transB: true });
    nn.submit('activation', { x: pre, y }, { op: act });
  } else {
    nn.submit('gemm', { a: x.data, b: w.data, c: y }, { transB: true });
  }
  const inputs = b === null ? [x, w] : [x, w, b];
  return nn.result(
    y,
    inputs,
    (g) => {
      let dpre = g;
      if (pre !== null) {
        dpre = nn.tensor([m, n]);
        nn.submit('activation_backward', { x: pre, dy: g, dx: dpre }, { op: act!, accumulate: false });
      }
      const dx = gradTarget(nn, x);
      if (dx !== null)
        nn.submit('gemm', { a: dpre, b: w.data, c: dx.tensor }, { beta: dx.accumulate ? 1 : 0 });
      if (b !== null) {
        const j = jointTargets(nn, [
          { v: w, shape: [n, k], dtype: w.dtype },
          { v: b, shape: [n], dtype: b.dtype },
        ]);
        if (w.requiresGrad || b.requiresGrad) {
          nn.submit(
            'linear_dw',
            { dy: dpre, x: x.data, dw: j.tensors[0]!, db: j.tensors[1]! },
            { accumulate: j.accumulate },
          );
        }
        j.finish();
      } else {
        const dw = gradTarget(nn, w);
        if (dw !== null)
          nn.submit(
            'gemm',
            { a: dpre, b: x.data, c: dw.tensor },
            { transA: true, beta: dw.accumulate ? 1 : 0 },
          );
      }
      if (dpre !== g) nn.free(dpre);
    },
    pre === null ? [] : [pre],
  );
}

/**
 * Two linear layers with an activation between them, as one recorded op (the transformer's MLP):
 * y = act(x·w1ᵀ + b1)·w2ᵀ + b2. Its backward fuses the activation's derivative into the second layer's
 * dx product (linear_dx_act: cuBLASLt's DGELU epilogue), so the hidden gradient is written once
 * instead of being written, read and rewritten.
 */
export function mlp(nn: Nn, x: Var, w1: Var, b1: Var, w2: Var, b2: Var, act: Activation): Var {
  const [m, k] = requireMatrix('mlp', 'x', x);
  const [hidden] = requireMatrix('mlp', 'w1', w1, k);
  const [n] = requireMatrix('mlp', 'w2', w2, hidden);
  const pre = nn.tensor([m, hidden]);
  const h = nn.tensor([m, hidden]);
  nn.submit('linear_act', { x: x.data, w: w1.data, b: b1.data, pre, y: h }, { act });
  const y = nn.tensor([m, n]);
  nn.submit('linear', { x: h, w: w2.data, b: b2.data, y });
  return nn.result(
    y,
    [x, w1, b1, w2, b2],
    (g) => {
      const j2 = jointTargets(nn, [
        { v: w2, shape: [n, hidden], dtype: w2.dtype },
        { v: b2, shape: [n], dtype: b2.dtype },
      ]);
      nn.submit(
        'linear_dw',
        { dy: g, x: h, dw: j2.tensors[0]!, db: j2.tensors[1]! },
        { accumulate: j2.accumulate },
      );
      j2.finish();
      const dpre = nn.tensor([m, hidden]);
      nn.submit('linear_dx_act', { dy: g, w: w2.data, pre, dx: dpre }, { act });
      const j1 = jointTargets(nn, [
        { v: w1, shape: [hidden, k], dtype: w1.dtype },
        { v: b1, shape: [hidden], dtype: b1.dtype },
      ]);
      nn.submit(
        'linear_dw',
        { dy: dpre, x: x.data, dw: j1.tensors[0]!, db: j1.tensors[1]! },
        { accumulate: j1.accumulate },
      );
      j1.finish();
      const dx = gradTarget(nn, x);
      if (dx !== null)
        nn.submit('gemm', { a: dpre, b: w1.data, c: dx.tensor }, { beta: dx.accumulate ? 1 : 0 });
      nn.free(dpre);
    },
    [pre, h],
  );
}
