/**
 * Layout operators. Reshape/Flatten/Squeeze/Unsqueeze are a device `copy` into the new shape
 * (row-major order is kept); Transpose, Slice, Split, Concat, Gather and Expand lower onto the onnx_*
 * data-movement kernels.
 */
import { MAX_RANK } from '../../kernels/onnx/shapes.js';
import { numelOf, type HostTensor } from '../host-tensor.js';
import {
  broadcastDims,
  broadcastTo,
  fail,
  hostInts,
  inp,
  make,
  normAxis,
  optHostInts,
  stridesOf,
} from './util.js';
import type { OpCall, OpImpl } from './types.js';
import { lowerWideSlice } from './wide-slice.js';

const list = (xs: readonly number[]): string => xs.join(',');

/** Out-of-bounds gather index → NaN, as the kernel (host values are checked earlier). */
function gatherDims(c: OpCall): { axis: number; dims: number[] } {
  const d = inp(c, 0).dims;
  const axis = normAxis(c, c.attrs.int('axis', 0), d.length);
  const dims = [...d.slice(0, axis), ...inp(c, 1).dims, ...d.slice(axis + 1)];
  return { axis, dims };
}

function reshapeDims(c: OpCall): number[] {
  const x = inp(c, 0).dims;
  const allowZero = c.attrs.int('allowzero', 0) === 1;
  const want = hostInts(c, 1, 'shape');
  const out = want.map((d, i) => (d === 0 && !allowZero ? x[i]! : d));
  const known = out.filter((d) => d !== -1).reduce((a, b) => a * b, 1);
  const n = numelOf(x);
  const free = out.filter((d) => d === -1).length;
  if (free > 1) throw fail(c, 'more than one -1 in the shape');
  if (free === 1) {
    if (known === 0 || n % known !== 0)
      throw fail(c, `cannot reshape [${x.join(', ')}] to [${want.join(', ')}]`);
    out[out.indexOf(-1)] = n / known;
  }
  if (numelOf(out) !== n || out.some((d) => d < 0))
    throw fail(c, `cannot reshape [${x.join(', ')}] to [${want.join(', ')}]`);
  return out;
}

function viewOp(dimsOf: (c: OpCall) => number[], hostInputs: number[] = []): OpImpl {
  return {
    hostInputs,
    infer: (c) => [{ type: inp(c, 0).type, dims: dimsOf(c) }],
    evaluate: (c, x) => [make(x[0]!.type, dimsOf(c), x[0]!.data)],
    lower: (_c, t) => t.submit('copy', { x: t.input(0), y: t.output(0) }),
  };
}

function squeezeDims(c: OpCall): number[] {
  const x = inp(c, 0).dims;
  const axesIn = c.opset >= 13 ? optHostInts(c, 1, 'axes') : c.attrs.ints('axes');
  const axes = axesIn
    ? axesIn.map((a) => normAxis(c, a, x.length))
    : x.flatMap((d, i) => (d === 1 ? [i] : []));
  for (const a of axes) if (x[a] !== 1) throw fail(c, `axis ${a} has size ${x[a]}, not 1`);
  return x.filter((_, i) => !axes.includes(i));
}

function unsqueezeDims(c: OpCall): number[] {
  const x = inp(c, 0).dims;
  const axesIn = c.opset >= 13 ? hostInts(c, 1, 'axes') : c.attrs.ints('axes');
  if (!axesIn) throw fail(c, 'axes are required', 'TANDEM_ERR_BAD_DATA');
  const r = x.length + axesIn.length;
  const axes = axesIn.map((a) => normAxis(c, a, r));
  const out: number[] = [];
  let k = 0;
  for (let i = 0; i < r; i++) out.push(axes.includes(i) ? 1 : x[k++]!);
  return out;
}

function flattenDims(c: OpCall): number[] {
  const x = inp(c, 0).dims;
  const a = c.attrs.int('axis', 1);
  const axis = a < 0 ? a + x.length : a;
  if (axis < 0 || axis > x.length) throw fail(c, `axis ${a} is out of range`);
  return [numelOf(x.slice(0, axis)), numelOf(x.slice(axis))];
}

function perm(c: OpCall): number[] {
  const r = inp(c, 0).dims.length;
  const p = c.attrs.ints('perm') ?? [...Array(r).keys()].reverse();
  if (p.length !== r || [...p].sort((a, b) => a - b).some((v, i) => v !== i))
    throw fail(c, `perm [${p.join(', ')}] is not a permutation of rank ${r}`);
  return [...p];
}

const transposeImpl: OpImpl = {
  infer: (c) => [{ type: inp(c, 0).type, dims: perm(c).map((p) => inp(c, 0).dims[p]!) }],
  evaluate: (c, x) => {
    const p = perm(c);
    const src = x[0]!;
    const dims = p.map((q) => src.dims[q]!);
    const ss = stridesOf(src.dims);
    const out = new Float64Array(src.data.length);
    const idx = new Array<number>(dims.length).fill(0);
    for (let e = 0; e < out.length; e++) {
      let off = 0;
      for (let d = 0; d < dims.length; d++) off += idx[d]! * ss[p[d]!]!;
      out[e] = src.data[off]!;
      for (let d = dims.length - 1; d >= 0; d--) {
        if (++idx[d]! < dims[d]!) break;
        idx[d] = 0;
      }
    }
    return [make(src.type, dims, out)];
  },
  lower: (c, t) => t.submit('onnx_transpose', { x: t.input(0), y: t.output(0) }, { perm: list(perm(c)) }),
};

interface SliceSpec {
  starts: number[];
  ends: number[];
  axes: number[];
  steps: number[];
}

function sliceSpec(c: OpCall): SliceSpec {
  const r = inp(c, 0).dims.length;
  if (c.opset < 10) {
    const starts = [...(c.attrs.ints('starts') ?? [])];
    const ends = [...(c.attrs.ints('ends') ?? [])];
    const axes = [...(c.attrs.ints('axes') ?? starts.map((_, i) => i))];
    return { starts, ends, axes: axes.map((a) => normAxis(c, a, r)), steps: starts.map(() => 1) };
  }
  const starts = hostInts(c, 1, 'starts');
  const ends = hostInts(c, 2, 'ends');
  const axes = optHostInts(c, 3, 'axes') ?? starts.map((_, i) => i);
  const steps = optHostInts(c, 4, 'steps') ?? starts.map(() => 1);
  if (ends.length !== starts.length || axes.length !== starts.length || steps.length !== starts.length)
    throw fail(c, 'starts, ends, axes and steps differ in length');
  if (steps.some((s) => s === 0)) throw fail(c, 'a step is 0');
  return { starts, ends, axes: axes.map((a) => normAxis(c, a, r)), steps };
}

/** Per-axis (start, step, count) after ONNX's clamping rules. */
function sliceRanges(dims: readonly number[], s: SliceSpec): Array<[number, number, number]> {
  const out = dims.map((d): [number, number, number] => [0, 1, d]);
  s.axes.forEach((a, i) => {
    const d = dims[a]!;
    const step = s.steps[i]!;
    let start = s.starts[i]!;
    let end = s.ends[i]!;
    if (start < 0) start += d;
    if (end < 0) end += d;
    if (step > 0) {
      start = Math.min(Math.max(start, 0), d);
      end = Math.min(Math.max(end, 0), d);
    } else {
      start = Math.min(Math.max(start, -1), d - 1);
      end = Math.min(Math.max(end, -1), d - 1);
    }
    const count = Math.max(0, Math.ceil((end - start) / step));
    out[a] = [start, step, count];
  });
  return out;
}

function gatherRanges(src: HostTensor, ranges: ReadonlyArray<[number, number, number]>): Float64Array {
  const dims = ranges.map((r) => r[2]);
  const ss = stridesOf(src.dims);
  const out = new Float64Array(numelOf(dims));
  const idx = new Array<number>(dims.length).fill(0);
  for (let e = 0; e < out.length; e++) {
    let off = 0;
    for (let d = 0; d < dims.length; d++) off += (ranges[d]![0] + idx[d]! * ranges[d]![1]) * ss[d]!;
    out[e] = src.data[off]!;
    for (let d = dims.length - 1; d >= 0; d--) {
      if (++idx[d]! < dims[d]!) break;
      idx[d] = 0;
    }
  }
  return out;
}

const sliceImpl: OpImpl = {
  hostInputs: [1, 2, 3, 4],
  infer: (c) => [{ type: inp(c, 0).type, dims: sliceRanges(inp(c, 0).dims, sliceSpec(c)).map((r) => r[2]) }],
  evaluate: (c, x) => {
    const ranges = sliceRanges(x[0]!.dims, sliceSpec(c));
    return [
      make(
        x[0]!.type,
        ranges.map((r) => r[2]),
        gatherRanges(x[0]!, ranges),
      ),
    ];
  },
  lower: (c, t) => {
    const s = sliceSpec(c);
    const rank = inp(c, 0).dims.length;
    if (rank > MAX_RANK) return lowerWideSlice(c, t, sliceRanges(inp(c, 0).dims, s));
    t.submit(
      'onnx_slice',
      { x: t.input(0), y: t.output(0) },
      {
        starts: list(s.starts),
        ends: list(s.ends.map((e) => Math.max(Math.min(e, 2 ** 31 - 1), -(2 ** 31)))),
        axes: list(s.axes),
        steps: list(s.steps),
      },
    );
  },
};

function splitSizes(c: OpCall): { axis: number; sizes: number[] } {
  const d = inp(c, 0).dims;
  const axis = normAxis(c, c.attrs.int('axis', 0), d.length);
  const given = c.opset >= 13 ? optHostInts(c, 1, 'split') : c.attrs.ints('split');
  const k = c.node.outputs.length;
  if (given) {
    if (given.length !== k || given.reduce((a, b) => a + b, 0) !== d[axis])
      throw fail(c, `split [${given.join(', ')}] does not add up to ${d[axis]} in ${k} parts`);
    return { axis, sizes: [...given] };
  }
  const n = c.attrs.int('num_outputs', k);
  const chunk = Math.ceil(d[axis]! / n);
  const sizes = Array.from({ length: n }, (_, i) => Math.max(0, Math.min(chunk, d[axis]! - i * chunk)));
  return { axis, sizes };
}

const splitImpl: OpImpl = {
  hostInputs: [1],
  infer: (c) => {
    const { axis, sizes } = splitSizes(c);
    return sizes.map((s) => ({
      type: inp(c, 0).type,
      dims: inp(c, 0).dims.map((v, i) => (i === axis ? s : v)),
    }));
  },
  evaluate: (c, x) => {
    const { axis, sizes } = splitSizes(c);
    let start = 0;
    return sizes.map((s) => {
      const ranges = x[0]!.dims.map((v, i): [number, number, number] =>
        i === axis ? [start, 1, s] : [0, 1, v],
      );
      start += s;
      return make(
        x[0]!.type,
        ranges.map((r) => r[2]),
        gatherRanges(x[0]!, ranges),
      );
    });
  },
  lower: (c, t) => {
    const { axis, sizes } = splitSizes(c);
    let start = 0;
    sizes.forEach((s, i) => {
      t.submit(
        'onnx_slice',
        { x: t.input(0), y: t.output(i) },
        { starts: `${start}`, ends: `${start + s}`, axes: `${axis}`, steps: '1' },
      );
      start += s;
    });
  },
};

function concatAxis(c: OpCall): number {
  return normAxis(c, c.attrs.int('axis'), inp(c, 0).dims.length);
}

const concatImpl: OpImpl = {
  infer: (c) => {
    const axis = concatAxis(c);
    const first = inp(c, 0).dims;
    let total = 0;
    c.inputs.forEach((v, i) => {
      const d = inp(c, i).dims;
      if (d.length !== first.length || d.some((s, k) => k !== axis && s !== first[k]))
        throw fail(c, `input ${i} [${d.join(', ')}] does not match [${first.join(', ')}] off axis ${axis}`);
      total += d[axis]!;
      void v;
    });
    return [{ type: inp(c, 0).type, dims: first.map((s, k) => (k === axis ? total : s)) }];
  },
  evaluate: (c, x) => {
    const axis = concatAxis(c);
    const dims = concatImpl.infer(c)[0]!.dims;
    const outer = numelOf(dims.slice(0, axis));
    const out = new Float64Array(numelOf(dims));
    let o = 0;
    for (let b = 0; b < outer; b++)
      for (const t of x) {
        const inner = numelOf(t!.dims.slice(axis));
        out.set(t!.data.subarray(b * inner, (b + 1) * inner), o);
        o += inner;
      }
    return [make(x[0]!.type, dims, out)];
  },
  lower: (c, t) => {
    const axis = concatAxis(c);
    let offset = 0;
    // onnx_concat reads y (it writes one slice and keeps the rest): a fresh y would be read as host
    // zeros and uploaded (157 MB for PaddleOCR's FPN concat at batch 16: 44 ms on the H200). A fill
    // on the device gives y its first contents there instead.
    t.submit('fill', { y: t.output(0) }, { value: 0 });
    c.inputs.forEach((v, i) => {
      if (numelOf(v!.dims) > 0) t.submit('onnx_concat', { x: t.input(i), y: t.output(0) }, { axis, offset });
      offset += v!.dims[axis]!;
    });
  },
};

const gatherImpl: OpImpl = {
  infer: (c) => [{ type: inp(c, 0).type, dims: gatherDims(c).dims }],
  evaluate: (c, x) => {
    const { axis, dims } = gatherDims(c);
    const [data, idx] = [x[0]!, x[1]!];
    const d = data.dims[axis]!;
    const outer = numelOf(data.dims.slice(0, axis));
    const inner = numelOf(data.dims.slice(axis + 1));
    const out = new Float64Array(numelOf(dims));
    let o = 0;
    for (let b = 0; b < outer; b++)
      for (const raw of idx.data) {
        const k = raw < 0 ? raw + d : raw;
        if (k < 0 || k >= d) throw fail(c, `index ${raw} is out of range for size ${d}`);
        out.set(data.data.subarray((b * d + k) * inner, (b * d + k + 1) * inner), o);
        o += inner;
      }
    return [make(data.type, dims, out)];
  },
  lower: (c, t) =>
    t.submit(
      'onnx_gather',
      { data: t.input(0), indices: t.input(1), y: t.output(0) },
      { axis: gatherDims(c).axis },
    ),
};

const expandImpl: OpImpl = {
  hostInputs: [1],
  infer: (c) => [{ type: inp(c, 0).type, dims: broadcastDims(c, inp(c, 0).dims, hostInts(c, 1, 'shape')) }],
  evaluate: (c, x) => {
    const dims = broadcastDims(c, x[0]!.dims, hostInts(c, 1, 'shape'));
    return [make(x[0]!.type, dims, broadcastTo(x[0]!, dims))];
  },
  lower: (_c, t) => t.submit('onnx_expand', { x: t.input(0), y: t.output(0) }),
};

export const LAYOUT_OPS: Record<string, OpImpl> = {
  Reshape: viewOp(reshapeDims, [1]),
  Flatten: viewOp(flattenDims),
  Squeeze: viewOp(squeezeDims, [1]),
  Unsqueeze: viewOp(unsqueezeDims, [1]),
  Transpose: transposeImpl,
  Slice: sliceImpl,
  Split: splitImpl,
  Concat: concatImpl,
  Gather: gatherImpl,
  Expand: expandImpl,
};
