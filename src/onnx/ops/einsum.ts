/**
 * Einsum composed from existing kernels: per operand, repeated labels become a diagonal (a copy to
 * [..., n·n] and an onnx_slice with step n + 1) and labels nobody else reads are summed (onnx_reduce);
 * two operands are then one batched onnx_matmul after onnx_transpose puts them in [batch, kept, summed]
 * and [batch, summed, kept] order; more operands are folded in from the left. The float64 evaluation
 * is the definition itself: a loop over every label's values.
 */
import type { Tensor } from '../../memory/tensor.js';
import { MAX_RANK } from '../../kernels/onnx/shapes.js';
import { numelOf, roundTo } from '../host-tensor.js';
import { DeviceOps } from './compose.js';
import { fail, inp, make } from './util.js';
import type { OpCall, OpImpl } from './types.js';

interface EinsumSpec {
  /** Each operand's label per axis (an ellipsis axis is a label of its own: '0', '1', …). */
  readonly operands: string[][];
  readonly output: string[];
  readonly size: ReadonlyMap<string, number>;
}

function parseEinsum(c: OpCall): EinsumSpec {
  const eq = c.attrs.string('equation', '').replace(/\s+/g, '');
  const [lhs, rhs] = eq.includes('->') ? eq.split('->') : [eq, undefined];
  const terms = lhs!.split(',');
  if (terms.length !== c.inputs.length)
    throw fail(
      c,
      `equation '${eq}' has ${terms.length} operands, the node ${c.inputs.length}`,
      'TANDEM_ERR_BAD_DATA',
    );
  const letters = (s: string) => {
    if (!/^[A-Za-z]*(\.\.\.)?[A-Za-z]*$/.test(s))
      throw fail(
        c,
        `equation '${eq}': term '${s}' is not letters around at most one ellipsis`,
        'TANDEM_ERR_BAD_DATA',
      );
    return s;
  };
  let ell = 0;
  const size = new Map<string, number>();
  const operands = terms.map((term, k) => {
    const dims = inp(c, k).dims;
    const [pre, post] = letters(term).includes('...') ? term.split('...') : [term, undefined];
    const n = post === undefined ? 0 : dims.length - pre!.length - post.length;
    if (n < 0 || (post === undefined && pre!.length !== dims.length))
      throw fail(c, `equation '${eq}': term '${term}' does not match rank ${dims.length}`);
    ell = Math.max(ell, n);
    // Ellipsis axes are aligned from the right, as numpy broadcasts them.
    const labels = [...pre!, ...Array.from({ length: n }, (_, j) => `${n - 1 - j}`), ...(post ?? '')];
    labels.forEach((l, i) => {
      const d = dims[i]!;
      const had = size.get(l);
      if (had !== undefined && had !== d && had !== 1 && d !== 1)
        throw fail(c, `equation '${eq}': label ${l} has sizes ${had} and ${d}`);
      if (had === undefined || had === 1) size.set(l, d);
    });
    return labels;
  });
  const ellLabels = Array.from({ length: ell }, (_, j) => `${ell - 1 - j}`);
  let output: string[];
  if (rhs === undefined) {
    const all = operands.flat().filter((l) => /[A-Za-z]/.test(l));
    output = [...ellLabels, ...[...new Set(all)].filter((l) => all.indexOf(l) === all.lastIndexOf(l)).sort()];
  } else {
    const [pre, post] = letters(rhs).includes('...') ? rhs.split('...') : [rhs, undefined];
    output = [...pre!, ...(post === undefined ? [] : ellLabels), ...(post ?? '')];
    if (post === undefined && ell > 0)
      throw fail(c, `equation '${eq}': the output drops the ellipsis`, 'TANDEM_ERR_UNSUPPORTED');
  }
  for (const l of output)
    if (!size.has(l))
      throw fail(c, `equation '${eq}': output label ${l} is in no operand`, 'TANDEM_ERR_BAD_DATA');
  return { operands, output, size };
}

function evaluate(c: OpCall, x: ReadonlyArray<{ data: Float64Array; dims: readonly number[] } | undefined>) {
  const s = parseEinsum(c);
  const labels = [...s.size.keys()];
  const outDims = s.output.map((l) => s.size.get(l)!);
  const out = new Float64Array(numelOf(outDims));
  const value = new Map<string, number>(labels.map((l) => [l, 0]));
  // Element offset of each operand at the current label values (a size-1 axis broadcasts: index 0).
  const offset = (k: number) =>
    s.operands[k]!.reduce((o, l, i) => o * x[k]!.dims[i]! + (x[k]!.dims[i] === 1 ? 0 : value.get(l)!), 0);
  const total = numelOf(labels.map((l) => s.size.get(l)!));
  for (let e = 0; e < total; e++) {
    let rest = e;
    for (let i = labels.length - 1; i >= 0; i--) {
      const n = s.size.get(labels[i]!)!;
      value.set(labels[i]!, rest % n);
      rest = Math.floor(rest / n);
    }
    let p = 1;
    for (let k = 0; k < s.operands.length; k++) p *= x[k]!.data[offset(k)]!;
    const o = s.output.reduce((acc, l) => acc * s.size.get(l)! + value.get(l)!, 0);
    out[o] += p;
  }
  const type = inp(c, 0).type;
  return [
    make(
      type,
      outDims,
      Array.from(out, (v) => roundTo(type, v)),
    ),
  ];
}

/** An operand on the device with its labels. */
interface Term {
  t: Tensor;
  labels: string[];
}

function permuted(o: DeviceOps, a: Term, order: readonly string[]): Term {
  const perm = order.map((l) => a.labels.indexOf(l));
  if (perm.every((p, i) => p === i)) return a;
  return { t: o.transpose(a.t, perm), labels: [...order] };
}

/** Repeated labels to diagonals, then labels read by no one else (`keep` says who) summed. */
function simplify(o: DeviceOps, a: Term, keep: (l: string) => boolean): Term {
  for (;;) {
    const l = a.labels.find((v, i) => a.labels.indexOf(v) !== i);
    if (l === undefined) break;
    const first = a.labels.indexOf(l);
    const second = a.labels.indexOf(l, first + 1);
    const rest = a.labels.map((_, i) => i).filter((i) => i !== first && i !== second);
    const n = a.t.shape[first]!;
    const moved = o.transpose(a.t, [...rest, first, second]);
    const flat = o.reshape(moved, [...rest.map((i) => a.t.shape[i]!), n * n]);
    const diag = o.tmp([...rest.map((i) => a.t.shape[i]!), n]);
    o.sliceStep(flat, flat.shape.length - 1, 0, n * n, n + 1, diag);
    // Any further copy of l among the others stays for the next round.
    a = { t: diag, labels: [...rest.map((i) => a.labels[i]!), l] };
  }
  const summed = a.labels.map((l, i) => (keep(l) ? -1 : i)).filter((i) => i >= 0);
  if (summed.length === 0) return a;
  return { t: o.reduceSum(a.t, summed), labels: a.labels.filter((_, i) => !summed.includes(i)) };
}

/** a·b summed over the labels they share that nothing later reads; undefined for a broadcast summed label. */
function contract(
  o: DeviceOps,
  a: Term,
  b: Term,
  needed: ReadonlySet<string>,
  size: ReadonlyMap<string, number>,
): Term | undefined {
  const batch = a.labels.filter((l) => b.labels.includes(l) && needed.has(l));
  const summed = a.labels.filter((l) => b.labels.includes(l) && !needed.has(l));
  const aOnly = a.labels.filter((l) => !b.labels.includes(l));
  const bOnly = b.labels.filter((l) => !a.labels.includes(l));
  const dim = (t: Term, l: string) => t.t.shape[t.labels.indexOf(l)]!;
  if (summed.some((l) => dim(a, l) !== dim(b, l))) return undefined;
  const prod = (ls: readonly string[]) => numelOf(ls.map((l) => size.get(l)!));
  const A = permuted(o, a, [...batch, ...aOnly, ...summed]);
  const B = permuted(o, b, [...batch, ...summed, ...bOnly]);
  // [batch…, M, K] × [batch…, K, N], batch axes kept apart so a size-1 (ellipsis) axis broadcasts.
  const A3 = o.reshape(A.t, [...batch.map((l) => dim(a, l)), prod(aOnly), prod(summed)]);
  const B3 = o.reshape(B.t, [...batch.map((l) => dim(b, l)), prod(summed), prod(bOnly)]);
  const bd = batch.map((l) => Math.max(dim(a, l), dim(b, l)));
  const C = o.matmul(A3, B3, [...bd, prod(aOnly), prod(bOnly)]);
  const labels = [...batch, ...aOnly, ...bOnly];
  return { t: o.reshape(C, [...bd, ...[...aOnly, ...bOnly].map((l) => size.get(l)!)]), labels };
}

const einsumImpl: OpImpl = {
  infer: (c) => {
    const s = parseEinsum(c);
    return [{ type: inp(c, 0).type, dims: s.output.map((l) => s.size.get(l)!) }];
  },
  evaluate,
  lower: (c, t) => {
    const s = parseEinsum(c);
    if (s.size.size > MAX_RANK + 2 || c.inputs.some((v) => v!.dims.length > MAX_RANK))
      throw fail(
        c,
        `an equation of ${s.size.size} labels on device data is not supported`,
        'TANDEM_ERR_UNSUPPORTED',
      );
    const o = new DeviceOps(t, t.input(0));
    const terms: Term[] = s.operands.map((labels, k) => ({ t: t.input(k), labels: [...labels] }));
    // A label is still needed while the output or an operand not yet folded in reads it.
    const needed = (from: number, except: number) =>
      new Set([...s.output, ...terms.flatMap((v, k) => (k >= from && k !== except ? v.labels : []))]);
    let acc = simplify(o, terms[0]!, (l) => needed(1, 0).has(l));
    for (let k = 1; k < terms.length; k++) {
      const next = simplify(o, terms[k]!, (l) => needed(k + 1, k).has(l) || acc.labels.includes(l));
      const prod = contract(o, acc, next, needed(k + 1, -1), s.size);
      if (!prod)
        throw fail(
          c,
          'a summed label of size 1 in one operand only (broadcast) is not supported',
          'TANDEM_ERR_UNSUPPORTED',
        );
      acc = prod;
      acc = simplify(o, acc, (l) => needed(k + 1, -1).has(l));
    }
    const res = permuted(o, acc, s.output);
    o.reshape(
      res.t,
      s.output.map((l) => s.size.get(l)!),
      t.output(0),
    );
  },
};

export const EINSUM_OPS: Record<string, OpImpl> = { Einsum: einsumImpl };
