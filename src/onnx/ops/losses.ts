/**
 * NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (reduction none / sum / mean, optional class
 * weights and ignore_index), composed from existing kernels: the picked log-probabilities by
 * onnx_gather_elements along the class axis, the class weights by onnx_gather, ignored targets masked
 * with onnx_compare + onnx_where, then onnx_binary / onnx_unary / onnx_reduce; SoftmaxCrossEntropyLoss
 * runs onnx_softmax (log) along the class axis first; inputs past the kernels' rank 6 run on flat
 * [N, C, D] views. The host evaluation is a float64 loop.
 */
import type { Tensor } from '../../memory/tensor.js';
import { MAX_RANK } from '../../kernels/onnx/shapes.js';
import { numelOf, roundTo, type HostTensor } from '../host-tensor.js';
import { fail, inp, make } from './util.js';
import type { LowerTarget, OpCall, OpImpl } from './types.js';

interface LossSpec {
  readonly reduction: 'none' | 'sum' | 'mean';
  readonly ignore: number | undefined;
  /** [N, d1 … dk]: the target's (and an unreduced loss's) dims. */
  readonly dims: number[];
  readonly classes: number;
}

function lossSpec(c: OpCall): LossSpec {
  const x = inp(c, 0).dims;
  const tgt = inp(c, 1).dims;
  if (x.length < 2) throw fail(c, 'the input must be [N, C, d1 …]');
  const dims = [x[0]!, ...x.slice(2)];
  if (tgt.length !== dims.length || tgt.some((d, i) => d !== dims[i]))
    throw fail(c, `target [${tgt.join(', ')}] must be [${dims.join(', ')}]`);
  const reduction = c.attrs.string('reduction', 'mean');
  if (reduction !== 'none' && reduction !== 'sum' && reduction !== 'mean')
    throw fail(c, `reduction ${reduction} is not none, sum or mean`, 'TANDEM_ERR_BAD_DATA');
  if (c.inputs[2] && (inp(c, 2).dims.length !== 1 || inp(c, 2).dims[0] !== x[1]))
    throw fail(c, `weight must be [${x[1]}]`);
  return {
    reduction,
    ignore: c.attrs.has('ignore_index') ? c.attrs.int('ignore_index') : undefined,
    dims,
    classes: x[1]!,
  };
}

/** Log-softmax along axis 1 of [N, C, rest…] in float64. */
function logSoftmax(x: HostTensor): Float64Array {
  const [n, ch] = [x.dims[0]!, x.dims[1]!];
  const inner = numelOf(x.dims.slice(2));
  const out = new Float64Array(x.data.length);
  for (let a = 0; a < n; a++)
    for (let i = 0; i < inner; i++) {
      const at = (k: number) => (a * ch + k) * inner + i;
      let mx = -Infinity;
      for (let k = 0; k < ch; k++) mx = Math.max(mx, x.data[at(k)]!);
      let s = 0;
      for (let k = 0; k < ch; k++) s += Math.exp(x.data[at(k)]! - mx);
      for (let k = 0; k < ch; k++) out[at(k)] = x.data[at(k)]! - mx - Math.log(s);
    }
  return out;
}

function lossImpl(softmax: boolean): OpImpl {
  const outDims = (s: LossSpec) => (s.reduction === 'none' ? s.dims : []);
  return {
    infer: (c) => {
      const s = lossSpec(c);
      const type = inp(c, 0).type;
      return softmax
        ? [
            { type, dims: outDims(s) },
            { type, dims: inp(c, 0).dims },
          ]
        : [{ type, dims: outDims(s) }];
    },
    evaluate: (c, x) => {
      const s = lossSpec(c);
      const input = x[0]!;
      const logp = softmax ? logSoftmax(input) : input.data;
      const inner = numelOf(s.dims.slice(1));
      const loss = new Float64Array(numelOf(s.dims));
      let wsum = 0;
      for (let e = 0; e < loss.length; e++) {
        const k = x[1]!.data[e]!;
        if (k === s.ignore) continue;
        if (k < 0 || k >= s.classes) throw fail(c, `target ${k} is out of range for ${s.classes} classes`);
        const w = x[2] ? x[2].data[k]! : 1;
        const [a, i] = [Math.floor(e / inner), e % inner];
        loss[e] = -logp[(a * s.classes + k) * inner + i]! * w;
        wsum += w;
      }
      let sum = 0;
      for (const v of loss) sum += v;
      const value = s.reduction === 'none' ? loss : [s.reduction === 'sum' ? sum : sum / wsum];
      const r = (d: ArrayLike<number>) => Array.from(d, (v) => roundTo(input.type, v));
      const outs = [make(input.type, outDims(s), r(value))];
      if (softmax) outs.push(make(input.type, input.dims, r(logp)));
      return outs;
    },
    lower: (c, t) => {
      const s = lossSpec(c);
      if (inp(c, 0).dims.length <= MAX_RANK) return lowerLoss(c, t, s, softmax);
      // Past the kernels' rank 6: [N, C, d1 … dk] as [N, C, d1·…·dk] (the loss is per position either
      // way): inputs copied into the flat views, outputs computed there and copied out.
      const x = inp(c, 0).dims;
      const flat = [x[0]!, x[1]!, numelOf(x.slice(2))];
      const view = (v: Tensor, dims: readonly number[]) => {
        const y = t.scratch(dims, v);
        t.submit('copy', { x: v, y });
        return y;
      };
      const ins = [view(t.input(0), flat), view(t.input(1), [flat[0]!, flat[2]!])];
      const outs = new Map<number, Tensor>();
      const flatDims = (i: number) => (i === 1 ? flat : s.reduction === 'none' ? [flat[0]!, flat[2]!] : []);
      const inner: LowerTarget = {
        ...t,
        input: (i) => ins[i] ?? t.input(i),
        output: (i) => {
          if (!outs.has(i)) outs.set(i, t.scratch(flatDims(i), t.input(0)));
          return outs.get(i)!;
        },
      };
      lowerLoss(c, inner, { ...s, dims: [flat[0]!, flat[2]!] }, softmax);
      for (const [i, v] of outs) t.submit('copy', { x: v, y: t.output(i) });
    },
  };
}

function lowerLoss(c: OpCall, t: LowerTarget, s: LossSpec, softmax: boolean): void {
  let x = t.input(0);
  if (softmax) {
    const wanted = (c.node.outputs[1] ?? '') !== '';
    const logp = wanted ? t.output(1) : t.scratch(x.shape, x);
    t.submit('onnx_softmax', { x, y: logp }, { axis: 1, log: true });
    x = logp;
  }
  const fill = (dims: readonly number[], like: Tensor, value: number) => {
    const f = t.scratch(dims, like);
    t.submit('fill', { y: f }, { value });
    return f;
  };
  let tgt = t.input(1);
  let mask: Tensor | undefined;
  if (s.ignore !== undefined) {
    // Ignored targets read class 0 (any valid index) and weigh 0.
    mask = t.scratch(s.dims, { dtype: 'u8' });
    t.submit('onnx_compare', { a: tgt, b: fill([], tgt, s.ignore), c: mask }, { op: 'equal' });
    const safe = t.scratch(s.dims, tgt);
    t.submit('onnx_where', { cond: mask, x: fill([], tgt, 0), y: tgt, z: safe });
    tgt = safe;
  }
  const col = [s.dims[0]!, 1, ...s.dims.slice(1)];
  const idx = t.scratch(col, tgt);
  t.submit('copy', { x: tgt, y: idx });
  const picked = t.scratch(col, x);
  t.submit('onnx_gather_elements', { data: x, indices: idx, y: picked }, { axis: 1 });
  let w: Tensor;
  if (c.inputs[2]) {
    w = t.scratch(s.dims, x);
    t.submit('onnx_gather', { data: t.input(2), indices: tgt, y: w }, { axis: 0 });
  } else w = fill(s.dims, x, 1);
  if (mask) {
    const w2 = t.scratch(s.dims, x);
    t.submit('onnx_where', { cond: mask, x: fill([], x, 0), y: w, z: w2 });
    w = w2;
  }
  const prod = t.scratch(s.dims, x);
  const flat = t.scratch(s.dims, x);
  t.submit('copy', { x: picked, y: flat });
  t.submit('onnx_binary', { a: flat, b: w, c: prod }, { op: 'mul' });
  const y = t.output(0);
  const loss = s.reduction === 'none' ? y : t.scratch(s.dims, x);
  t.submit('onnx_unary', { x: prod, y: loss }, { op: 'neg' });
  if (s.reduction === 'none') return;
  const all = { op: 'sum', axes: '', keepdims: false };
  if (s.reduction === 'sum') return t.submit('onnx_reduce', { x: loss, y }, all);
  const [num, den] = [t.scratch([], x), t.scratch([], x)];
  t.submit('onnx_reduce', { x: loss, y: num }, all);
  t.submit('onnx_reduce', { x: w, y: den }, all);
  t.submit('onnx_binary', { a: num, b: den, c: y }, { op: 'div' });
}

export const LOSS_OPS: Record<string, OpImpl> = {
  NegativeLogLikelihoodLoss: lossImpl(false),
  SoftmaxCrossEntropyLoss: lossImpl(true),
};
