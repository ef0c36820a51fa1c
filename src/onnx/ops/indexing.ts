/**
 * Index and scan operators: ArgMax/ArgMin (onnx_argreduce; int64 indices, i32 on device as every int64
 * tensor), GatherElements (onnx_gather_elements), Trilu (onnx_trilu), CumSum (onnx_cumsum), Hardmax
 * (onnx_hardmax) and OneHot (onnx_onehot). The
 * host evaluation runs the kernels' own float64 references, so host and device agree by construction.
 */
import type { Scalars } from '../../devices/device.js';
import type { Tensor } from '../../memory/tensor.js';
import type { RefArg } from '../../kernels/common/reference.js';
import { onnxArgReduceReference } from '../../kernels/onnx/index-ops.js';
import { onehotGeometry, onnxHardmaxReference, onnxOnehotReference } from '../../kernels/onnx/onehot.js';
import { onnxCumsumReference, onnxTriluReference } from '../../kernels/onnx/scan.js';
import { onnxTopkReference } from '../../kernels/onnx/topk.js';
import { MAX_RANK } from '../../kernels/onnx/shapes.js';
import { numelOf, roundTo, type HostTensor } from '../host-tensor.js';
import { fail, hostInts, inp, make, normAxis, same, stridesOf } from './util.js';
import type { OpCall, OpImpl } from './types.js';

/** A host tensor as a reference argument (the dtype only tells the references float from integer). */
function refArg(t: { dims: readonly number[]; data?: Float64Array }, float = true): RefArg {
  const shape = [...t.dims];
  return {
    desc: { shape, dtype: float ? 'f64' : 'i32', bytes: 0 },
    values: t.data ?? new Float64Array(numelOf(shape)),
  };
}

/** The device kernels take rank ≤ 6 (the host evaluation any rank). */
function deviceRank(c: OpCall): void {
  const r = inp(c, 0).dims.length;
  if (r > MAX_RANK)
    throw fail(
      c,
      `rank ${r} on device data is not supported (at most ${MAX_RANK})`,
      'TANDEM_ERR_UNSUPPORTED',
    );
}

/**
 * Dims around `axis` collapsed to [∏ before, dims[axis], ∏ after]: the references take rank ≤ 6, the
 * host evaluation any rank, and the ops along one axis see the same lines either way.
 */
function lines(dims: readonly number[], axis: number): number[] {
  return [numelOf(dims.slice(0, axis)), dims[axis]!, numelOf(dims.slice(axis + 1))];
}

// ---- ArgMax / ArgMin

function argScalars(c: OpCall): Scalars {
  const rank = inp(c, 0).dims.length;
  return {
    op: c.node.opType === 'ArgMin' ? 'min' : 'max',
    axis: normAxis(c, c.attrs.int('axis', 0), rank),
    keepdims: c.attrs.int('keepdims', 1) === 1,
    selectLastIndex: c.attrs.int('select_last_index', 0) === 1,
  };
}

function argDims(c: OpCall): number[] {
  const d = inp(c, 0).dims;
  if (d.length === 0) throw fail(c, 'the input must have rank ≥ 1');
  const axis = argScalars(c)['axis'] as number;
  if (d[axis] === 0) throw fail(c, `axis ${axis} is empty`);
  return argScalars(c)['keepdims'] === true
    ? d.map((v, i) => (i === axis ? 1 : v))
    : d.filter((_, i) => i !== axis);
}

const argImpl: OpImpl = {
  infer: (c) => [{ type: 'int64', dims: argDims(c) }],
  evaluate: (c, x) => {
    const dims = argDims(c);
    const s = argScalars(c);
    const view = lines(x[0]!.dims, s['axis'] as number);
    const y = onnxArgReduceReference(
      { x: refArg({ dims: view, data: x[0]!.data }), y: refArg({ dims: [view[0]!, 1, view[2]!] }, false) },
      { ...s, axis: 1, keepdims: true },
    ).y!;
    return [make('int64', dims, y)];
  },
  lower: (c, t) => {
    deviceRank(c);
    t.submit('onnx_argreduce', { x: t.input(0), y: t.output(0) }, argScalars(c));
  },
};

// ---- GatherElements

function gatherElementsSpec(c: OpCall): { axis: number; dims: readonly number[] } {
  const [d, id] = [inp(c, 0).dims, inp(c, 1).dims];
  const axis = normAxis(c, c.attrs.int('axis', 0), d.length);
  if (id.length !== d.length || id.some((v, i) => i !== axis && v > d[i]!))
    throw fail(
      c,
      `indices [${id.join(', ')}] must have data's rank and fit [${d.join(', ')}] off axis ${axis}`,
    );
  return { axis, dims: id };
}

const gatherElementsImpl: OpImpl = {
  infer: (c) => [{ type: inp(c, 0).type, dims: gatherElementsSpec(c).dims }],
  evaluate: (c, x) => {
    const { axis, dims } = gatherElementsSpec(c);
    const [data, idx] = [x[0]!, x[1]!];
    const d = data.dims[axis]!;
    for (const raw of idx.data)
      if (raw < -d || raw >= d) throw fail(c, `index ${raw} is out of range for size ${d}`);
    // Any rank (the kernel's reference takes ≤ 6): y[i…] = data[i… with i[axis] = index].
    const ds = stridesOf(data.dims);
    const coord = new Array<number>(dims.length).fill(0);
    const y = new Float64Array(idx.data.length);
    for (let e = 0; e < y.length; e++) {
      const raw = idx.data[e]!;
      let off = 0;
      for (let k = 0; k < dims.length; k++)
        off += (k === axis ? (raw < 0 ? raw + d : raw) : coord[k]!) * ds[k]!;
      y[e] = data.data[off]!;
      for (let k = dims.length - 1; k >= 0; k--) {
        if (++coord[k]! < dims[k]!) break;
        coord[k] = 0;
      }
    }
    return [make(data.type, dims, y)];
  },
  lower: (c, t) => {
    const { axis } = gatherElementsSpec(c);
    const [d, i] = [inp(c, 0).dims, inp(c, 1).dims];
    const alike = (from: number, to: number) => d.slice(from, to).every((v, k) => v === i[from + k]);
    if (d.length <= MAX_RANK || !alike(0, axis) || !alike(axis + 1, d.length)) {
      deviceRank(c);
      return t.submit(
        'onnx_gather_elements',
        { data: t.input(0), indices: t.input(1), y: t.output(0) },
        { axis },
      );
    }
    // Past rank 6 with indices as large as data off the axis: [outer, axis, inner] views, the same
    // elements in the same order.
    const [outer, inner] = [numelOf(d.slice(0, axis)), numelOf(d.slice(axis + 1))];
    const view = (v: Tensor, n: number) => {
      const y = t.scratch([outer, n, inner], v);
      t.submit('copy', { x: v, y });
      return y;
    };
    const y = t.scratch([outer, i[axis]!, inner], t.output(0));
    t.submit(
      'onnx_gather_elements',
      { data: view(t.input(0), d[axis]!), indices: view(t.input(1), i[axis]!), y },
      { axis: 1 },
    );
    t.submit('copy', { x: y, y: t.output(0) });
  },
};

// ---- Trilu

function triluScalars(c: OpCall): Scalars {
  if (inp(c, 0).dims.length < 2) throw fail(c, 'the input must have rank ≥ 2');
  const k = c.inputs[1] ? hostInts(c, 1, 'k')[0] : 0;
  if (k === undefined) throw fail(c, 'k must hold one value');
  return { upper: c.attrs.int('upper', 1) === 1, k: Math.max(Math.min(k, 2 ** 31 - 1), -(2 ** 31)) };
}

const triluImpl: OpImpl = {
  hostInputs: [1],
  infer: (c) => {
    triluScalars(c);
    return [same(c)];
  },
  evaluate: (c, x) => {
    const t = x[0]!;
    const r = t.dims.length;
    const view = { dims: [numelOf(t.dims.slice(0, r - 2)), t.dims[r - 2]!, t.dims[r - 1]!], data: t.data };
    return [make(t.type, t.dims, onnxTriluReference({ x: refArg(view) }, triluScalars(c)).y!)];
  },
  lower: (c, t) => {
    deviceRank(c);
    t.submit('onnx_trilu', { x: t.input(0), y: t.output(0) }, triluScalars(c));
  },
};

// ---- CumSum

function cumsumScalars(c: OpCall): Scalars {
  const d = inp(c, 0).dims;
  if (d.length === 0) throw fail(c, 'the input must have rank ≥ 1');
  const axis = hostInts(c, 1, 'axis');
  if (axis.length !== 1) throw fail(c, `axis must hold one value, got ${axis.length}`);
  return {
    axis: normAxis(c, axis[0]!, d.length),
    exclusive: c.attrs.int('exclusive', 0) === 1,
    reverse: c.attrs.int('reverse', 0) === 1,
  };
}

const cumsumImpl: OpImpl = {
  hostInputs: [1],
  infer: (c) => {
    cumsumScalars(c);
    const s = same(c);
    if (s.type === 'bool' || s.type === 'string')
      throw fail(c, `element type ${s.type} is not supported`, 'TANDEM_ERR_DTYPE');
    return [s];
  },
  evaluate: (c, x) => {
    const t: HostTensor = x[0]!;
    const s = cumsumScalars(c);
    const view = { dims: lines(t.dims, s['axis'] as number), data: t.data };
    const y = onnxCumsumReference({ x: refArg(view) }, { ...s, axis: 1 }).y!;
    return [
      make(
        t.type,
        t.dims,
        y.map((v) => roundTo(t.type, v)),
      ),
    ];
  },
  lower: (c, t) => {
    deviceRank(c);
    const y = t.output(0);
    if (y.dtype === 'u8')
      throw fail(c, 'CumSum of 8-bit data on device is not supported', 'TANDEM_ERR_UNSUPPORTED');
    t.submit('onnx_cumsum', { x: t.input(0), y }, cumsumScalars(c));
  },
};

// ---- Hardmax

/** Opset ≥ 13: along `axis` [−1]; before: x flattened to [∏ dims < axis, ∏ dims ≥ axis] [axis 1], axis 1. */
function hardmaxLayout(c: OpCall): { view: number[]; axis: number } {
  const d = inp(c, 0).dims;
  if (d.length === 0) throw fail(c, 'the input must have rank ≥ 1');
  const legacy = c.opset < 13;
  const axis = normAxis(c, c.attrs.int('axis', legacy ? 1 : -1), d.length);
  if (!legacy) return { view: [...d], axis };
  return { view: [numelOf(d.slice(0, axis)), numelOf(d.slice(axis))], axis: 1 };
}

const hardmaxImpl: OpImpl = {
  infer: (c) => {
    hardmaxLayout(c);
    const s = same(c);
    if (!['float', 'double', 'float16', 'bfloat16'].includes(s.type))
      throw fail(c, `element type ${s.type} is not supported`, 'TANDEM_ERR_DTYPE');
    return [s];
  },
  evaluate: (c, x) => {
    const { view, axis } = hardmaxLayout(c);
    const y = onnxHardmaxReference(
      { x: refArg({ dims: lines(view, axis), data: x[0]!.data }) },
      { axis: 1 },
    ).y!;
    return [make(x[0]!.type, x[0]!.dims, y)];
  },
  lower: (c, t) => {
    deviceRank(c);
    const { view, axis } = hardmaxLayout(c);
    const [x, y] = [t.input(0), t.output(0)];
    if (view.length === x.shape.length) return t.submit('onnx_hardmax', { x, y }, { axis });
    const [x2, y2] = [t.scratch(view, x), t.scratch(view, y)];
    t.submit('copy', { x, y: x2 });
    t.submit('onnx_hardmax', { x: x2, y: y2 }, { axis });
    t.submit('copy', { x: y2, y });
  },
};

// ---- OneHot

/** depth (truncated) and [off, on] from constant inputs; axis [−1] inserts the new axis. */
function onehotScalars(c: OpCall): Scalars {
  const depth = hostInts(c, 1, 'depth');
  const values = hostInts(c, 2, 'values');
  if (depth.length !== 1) throw fail(c, `depth must hold one value, got ${depth.length}`);
  if (values.length !== 2) throw fail(c, `values must hold [off, on], got ${values.length} values`);
  const d = Math.trunc(depth[0]!);
  if (!(d >= 1)) throw fail(c, `depth ${depth[0]} must be ≥ 1`);
  const r = inp(c, 0).dims.length;
  return { depth: d, axis: normAxis(c, c.attrs.int('axis', -1), r + 1), off: values[0]!, on: values[1]! };
}

function onehotDims(c: OpCall): number[] {
  const s = onehotScalars(c);
  const d = inp(c, 0).dims;
  const axis = s['axis'] as number;
  return [...d.slice(0, axis), s['depth'] as number, ...d.slice(axis)];
}

const onehotImpl: OpImpl = {
  hostInputs: [1, 2],
  infer: (c) => [{ type: inp(c, 2).type, dims: onehotDims(c) }],
  evaluate: (c, x) => {
    // The indices as [∏ before axis, ∏ after] (the reference takes rank ≤ 5), the result as [.., depth, ..].
    const s = onehotScalars(c);
    const axis = s['axis'] as number;
    const d = x[0]!.dims;
    const view = { dims: [numelOf(d.slice(0, axis)), numelOf(d.slice(axis))], data: x[0]!.data };
    const out = onehotGeometry({ shape: view.dims }, { ...s, axis: 1 }).shape;
    const y = onnxOnehotReference({ indices: refArg(view), y: refArg({ dims: out }) }, { ...s, axis: 1 }).y!;
    return [make(x[2]!.type, onehotDims(c), y)];
  },
  lower: (c, t) => {
    if (inp(c, 0).dims.length >= MAX_RANK)
      throw fail(
        c,
        `rank ${inp(c, 0).dims.length + 1} on device data is not supported`,
        'TANDEM_ERR_UNSUPPORTED',
      );
    t.submit('onnx_onehot', { indices: t.input(0), y: t.output(0) }, onehotScalars(c));
  },
};

// ---- TopK

/** k from the input (opset ≥ 10) or the attribute; axis [−1]; largest [1]; sorted is always honoured. */
function topkScalars(c: OpCall): Scalars {
  const d = inp(c, 0).dims;
  if (d.length === 0) throw fail(c, 'the input must have rank ≥ 1');
  const axis = normAxis(c, c.attrs.int('axis', -1), d.length);
  const k = c.opset >= 10 ? hostInts(c, 1, 'K') : [c.attrs.int('k')];
  if (k.length !== 1 || !(k[0]! >= 0 && k[0]! <= d[axis]!))
    throw fail(c, `K [${k.join(', ')}] must be one value in [0, ${d[axis]}]`);
  return { k: k[0]!, axis, largest: c.attrs.int('largest', 1) === 1 };
}

const topkImpl: OpImpl = {
  hostInputs: [1],
  infer: (c) => {
    const s = topkScalars(c);
    const dims = inp(c, 0).dims.map((v, i) => (i === s['axis'] ? (s['k'] as number) : v));
    return [
      { type: inp(c, 0).type, dims },
      { type: 'int64', dims },
    ];
  },
  evaluate: (c, x) => {
    const s = topkScalars(c);
    const t = x[0]!;
    const axis = s['axis'] as number;
    const dims = t.dims.map((v, i) => (i === axis ? (s['k'] as number) : v));
    const view = { dims: lines(t.dims, axis), data: t.data };
    const out = [view.dims[0]!, s['k'] as number, view.dims[2]!];
    const r = onnxTopkReference(
      { x: refArg(view), values: refArg({ dims: out }), indices: refArg({ dims: out }, false) },
      { ...s, axis: 1 },
    );
    return [make(t.type, dims, r.values!), make('int64', dims, r.indices!)];
  },
  lower: (c, t) => {
    deviceRank(c);
    // An output the graph leaves out ('') goes to a scratch tensor (K's i32 tensor gives the dtype).
    const wanted = (i: number) => (c.node.outputs[i] ?? '') !== '';
    const x = t.input(0);
    const dims = x.shape.map((v, i) => (i === topkScalars(c)['axis'] ? (topkScalars(c)['k'] as number) : v));
    if (!wanted(1) && !c.inputs[1])
      throw fail(c, 'TopK without its Indices output needs opset ≥ 10 on device', 'TANDEM_ERR_UNSUPPORTED');
    const values = wanted(0) ? t.output(0) : t.scratch(dims, x);
    const indices = wanted(1) ? t.output(1) : t.scratch(dims, t.input(1));
    t.submit('onnx_topk', { x, values, indices }, topkScalars(c));
  },
};

export const INDEX_OPS: Record<string, OpImpl> = {
  ArgMax: argImpl,
  ArgMin: argImpl,
  GatherElements: gatherElementsImpl,
  Trilu: triluImpl,
  CumSum: cumsumImpl,
  Hardmax: hardmaxImpl,
  OneHot: onehotImpl,
  TopK: topkImpl,
};
