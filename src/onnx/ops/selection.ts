/**
 * Ops whose output size depends on data: Compress, NonZero, Unique and NonMaxSuppression. A plan fixes every
 * value's dims before the run, so the data deciding a size must be known on the host when the plan is
 * bound (an initializer, an integer input, or a graph input the executor keeps on the host because an
 * op lists it in hostInputs). Compress then runs on the device: its condition (host-known) becomes the
 * kept indices of an onnx_gather. NonZero, Unique and NonMaxSuppression are evaluated on the host from their
 * host-known inputs (their results are small index lists); on data computed during the run they are
 * TANDEM_ERR_UNSUPPORTED, never a wrong size.
 */
import { numelOf, roundTo, type HostTensor } from '../host-tensor.js';
import { fail, inp, make, normAxis } from './util.js';
import type { OpCall, OpImpl } from './types.js';

function needHost(c: OpCall, i: number, what: string): HostTensor {
  const v = inp(c, i);
  if (!v.host)
    throw fail(
      c,
      `${what} computed during the run (op ${c.node.opType}, domain ai.onnx, opset ${c.opset}, input ${i}) is not supported: it decides the output size`,
      'TANDEM_ERR_UNSUPPORTED',
    );
  return v.host;
}

// ---- Compress

function compressSpec(c: OpCall) {
  const x = inp(c, 0).dims;
  const cond = needHost(c, 1, 'the condition');
  if (cond.dims.length !== 1) throw fail(c, `condition must be 1-d, got [${cond.dims.join(', ')}]`);
  const axis = c.attrs.has('axis') ? normAxis(c, c.attrs.int('axis'), x.length) : undefined;
  const len = axis === undefined ? x.reduce((a, b) => a * b, 1) : x[axis]!;
  if (cond.data.length > len)
    throw fail(c, `condition has ${cond.data.length} entries, the axis ${len}`, 'TANDEM_ERR_BAD_DATA');
  const kept: number[] = [];
  cond.data.forEach((v, i) => v !== 0 && kept.push(i));
  const dims = axis === undefined ? [kept.length] : x.map((d, i) => (i === axis ? kept.length : d));
  return { axis, kept, dims };
}

const compressImpl: OpImpl = {
  hostInputs: [1],
  infer: (c) => [{ type: inp(c, 0).type, dims: compressSpec(c).dims }],
  evaluate: (c, x) => {
    const s = compressSpec(c);
    const src = x[0]!;
    const axis = s.axis ?? 0;
    const dims = s.axis === undefined ? [src.data.length] : src.dims;
    const outer = dims.slice(0, axis).reduce((a, b) => a * b, 1);
    const inner = dims.slice(axis + 1).reduce((a, b) => a * b, 1);
    const out: number[] = [];
    for (let o = 0; o < outer; o++)
      for (const k of s.kept)
        for (let i = 0; i < inner; i++) out.push(src.data[(o * dims[axis]! + k) * inner + i]!);
    return [make(src.type, s.dims, out)];
  },
  lower: (c, t) => {
    const s = compressSpec(c);
    let x = t.input(0);
    if (s.axis === undefined) {
      const flat = t.scratch([x.shape.reduce((a, b) => a * b, 1)], x);
      t.submit('copy', { x, y: flat });
      x = flat;
    }
    if (s.kept.length === 0) return;
    const indices = t.constant([s.kept.length], 'i32', s.kept);
    t.submit('onnx_gather', { data: x, indices, y: t.output(0) }, { axis: s.axis ?? 0 });
  },
};

// ---- NonZero

const nonZeroImpl: OpImpl = {
  hostInputs: [0],
  infer: (c) => {
    const x = needHost(c, 0, 'the input');
    return [{ type: 'int64', dims: [x.dims.length, x.data.filter((v) => v !== 0).length] }];
  },
  evaluate: (_c, x) => {
    const t = x[0]!;
    const hits: number[] = [];
    t.data.forEach((v, e) => v !== 0 && hits.push(e));
    // [rank, count]: row d holds the d-th coordinate of every nonzero element, in storage order.
    const out: number[] = [];
    t.dims.forEach((_, d) => {
      const stride = numelOf(t.dims.slice(d + 1));
      for (const e of hits) out.push(Math.floor(e / stride) % t.dims[d]!);
    });
    return [make('int64', [t.dims.length, hits.length], out)];
  },
};

// ---- Unique

/** Unique's four outputs, from ONNX's definition (np.unique, first occurrences in order when unsorted). */
function unique(c: OpCall, x: HostTensor) {
  const axis = c.attrs.has('axis') ? normAxis(c, c.attrs.int('axis'), x.dims.length) : undefined;
  const dims = axis === undefined ? [x.data.length] : x.dims;
  const a = axis ?? 0;
  const outer = dims.slice(0, a).reduce((p, q) => p * q, 1);
  const inner = dims.slice(a + 1).reduce((p, q) => p * q, 1);
  const n = dims[a]!;
  // Slice k along the axis as a list of values (one value without an axis).
  const slice = (k: number) => {
    const v: number[] = [];
    for (let o = 0; o < outer; o++) for (let i = 0; i < inner; i++) v.push(x.data[(o * n + k) * inner + i]!);
    return v;
  };
  const slices = Array.from({ length: n }, (_, k) => slice(k));
  const key = (v: readonly number[]) => v.join(',');
  const first = new Map<string, number>();
  slices.forEach((v, k) => first.has(key(v)) || first.set(key(v), k));
  let order = [...first.values()];
  if (c.attrs.int('sorted', 1) !== 0) {
    const cmp = (p: readonly number[], q: readonly number[]) => {
      for (let i = 0; i < p.length; i++) if (p[i] !== q[i]) return p[i]! - q[i]!;
      return 0;
    };
    order = order.sort((p, q) => cmp(slices[p]!, slices[q]!));
  }
  const rank = new Map(order.map((k, r) => [key(slices[k]!), r]));
  const inverse = slices.map((v) => rank.get(key(v))!);
  const counts = order.map((_, r) => inverse.filter((v) => v === r).length);
  const ydims = axis === undefined ? [order.length] : x.dims.map((d, i) => (i === a ? order.length : d));
  const y: number[] = [];
  for (let o = 0; o < outer; o++)
    for (const k of order) for (let i = 0; i < inner; i++) y.push(x.data[(o * n + k) * inner + i]!);
  return { ydims, y, order, inverse, counts };
}

const uniqueImpl: OpImpl = {
  hostInputs: [0],
  infer: (c) => {
    const u = unique(c, needHost(c, 0, 'the input'));
    const m = u.order.length;
    return [
      { type: inp(c, 0).type, dims: u.ydims },
      { type: 'int64', dims: [m] },
      { type: 'int64', dims: [u.inverse.length] },
      { type: 'int64', dims: [m] },
    ];
  },
  evaluate: (c, x) => {
    const u = unique(c, x[0]!);
    const m = u.order.length;
    return [
      make(x[0]!.type, u.ydims, u.y),
      make('int64', [m], u.order),
      make('int64', [u.inverse.length], u.inverse),
      make('int64', [m], u.counts),
    ];
  },
};

// ---- NonMaxSuppression

function nmsSelect(c: OpCall, x: ReadonlyArray<HostTensor | undefined>): number[] {
  const [boxes, scores] = [x[0]!, x[1]!];
  const [nb, nBoxes] = [boxes.dims[0]!, boxes.dims[1]!];
  const classes = scores.dims[1]!;
  if (boxes.dims.length !== 3 || boxes.dims[2] !== 4 || scores.dims.length !== 3)
    throw fail(c, `boxes must be [B, N, 4] and scores [B, C, N]`);
  if (scores.dims[0] !== nb || scores.dims[2] !== nBoxes)
    throw fail(c, `scores [${scores.dims.join(', ')}] do not match boxes [${boxes.dims.join(', ')}]`);
  const maxOut = x[2] && x[2].data.length > 0 ? x[2].data[0]! : 0;
  const iouMax = x[3] && x[3].data.length > 0 ? x[3].data[0]! : 0;
  const minScore = x[4] && x[4].data.length > 0 ? x[4].data[0]! : -Infinity;
  const center = c.attrs.int('center_point_box', 0) !== 0;
  // Corners (y1, x1, y2, x2) ordered low to high, whichever way the box was given.
  const corners = (b: number, i: number): [number, number, number, number] => {
    const d = boxes.data.subarray((b * nBoxes + i) * 4, (b * nBoxes + i) * 4 + 4);
    if (center) {
      const [cx, cy, w, h] = [d[0]!, d[1]!, d[2]!, d[3]!];
      return [cy - h / 2, cx - w / 2, cy + h / 2, cx + w / 2];
    }
    return [Math.min(d[0]!, d[2]!), Math.min(d[1]!, d[3]!), Math.max(d[0]!, d[2]!), Math.max(d[1]!, d[3]!)];
  };
  const iou = (p: number[], q: number[]) => {
    const area = (r: number[]) => (r[2]! - r[0]!) * (r[3]! - r[1]!);
    const ih = Math.min(p[2]!, q[2]!) - Math.max(p[0]!, q[0]!);
    const iw = Math.min(p[3]!, q[3]!) - Math.max(p[1]!, q[1]!);
    if (ih <= 0 || iw <= 0 || area(p) <= 0 || area(q) <= 0) return 0;
    const inter = ih * iw;
    return inter / (area(p) + area(q) - inter);
  };
  const out: number[] = [];
  for (let b = 0; b < nb; b++)
    for (let k = 0; k < classes; k++) {
      const score = (i: number) => scores.data[(b * classes + k) * nBoxes + i]!;
      const cand = Array.from({ length: nBoxes }, (_, i) => i)
        .filter((i) => score(i) > minScore)
        .sort((p, q) => score(q) - score(p) || p - q);
      const kept: Array<[number, number, number, number]> = [];
      for (const i of cand) {
        if (kept.length >= maxOut) break;
        const box = corners(b, i);
        if (kept.some((q) => iou(q, box) > iouMax)) continue;
        kept.push(box);
        out.push(b, k, i);
      }
    }
  return out;
}

const nmsImpl: OpImpl = {
  hostInputs: [0, 1, 2, 3, 4],
  infer: (c) => {
    const x = [0, 1, 2, 3, 4].map((i) => (c.inputs[i] ? needHost(c, i, 'a box, score or limit') : undefined));
    return [{ type: 'int64', dims: [nmsSelect(c, x).length / 3, 3] }];
  },
  evaluate: (c, x) => {
    const sel = nmsSelect(c, x);
    return [
      make(
        'int64',
        [sel.length / 3, 3],
        sel.map((v) => roundTo('int64', v)),
      ),
    ];
  },
};

export const SELECTION_OPS: Record<string, OpImpl> = {
  Compress: compressImpl,
  NonZero: nonZeroImpl,
  Unique: uniqueImpl,
  NonMaxSuppression: nmsImpl,
};
