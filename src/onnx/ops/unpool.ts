/**
 * MaxUnpool: the values of X written at their flat positions I (MaxPool's Indices) in a zero tensor of
 * the unpooled shape, (in − 1)·stride − pads + kernel per spatial axis. An output_shape differing from
 * it keeps each value at the same coordinates (ONNX's tests: indices are positions in the unpooled
 * shape), i.e. zeros appended (or cells cut) at the end of each spatial axis. On device a fill, then
 * onnx_scatter_elements along the flat unpooled tensor (indices and values read as 1-d), then onnx_pad
 * to output_shape when given.
 */
import { numelOf } from '../host-tensor.js';
import { fail, inp, make, optHostInts } from './util.js';
import type { OpCall, OpImpl } from './types.js';

/** The unpooled dims, and the output's (output_shape when given). */
function unpoolDims(c: OpCall): { dims: number[]; out: number[] } {
  const dims = defaultDims(c);
  const given = optHostInts(c, 2, 'output_shape');
  if (given && (given.length !== dims.length || given[0] !== dims[0] || given[1] !== dims[1]))
    throw fail(c, `output_shape [${given.join(', ')}] must keep X's N and C`);
  return { dims, out: given ?? dims };
}

function defaultDims(c: OpCall): number[] {
  const x = inp(c, 0).dims;
  const spatial = x.length - 2;
  if (spatial < 1) throw fail(c, `X must be [N, C, d1 …], got rank ${x.length}`);
  const k = c.attrs.ints('kernel_shape');
  if (!k || k.length !== spatial)
    throw fail(c, `kernel_shape must list ${spatial} sizes`, 'TANDEM_ERR_BAD_DATA');
  const s = c.attrs.ints('strides') ?? k.map(() => 1);
  const p = c.attrs.ints('pads') ?? [...k, ...k].map(() => 0);
  return [x[0]!, x[1]!, ...x.slice(2).map((d, i) => (d - 1) * s[i]! - p[i]! - p[i + spatial]! + k[i]!)];
}

const maxUnpoolImpl: OpImpl = {
  hostInputs: [2],
  infer: (c) => {
    if (inp(c, 1).dims.join() !== inp(c, 0).dims.join()) throw fail(c, "I must have X's shape");
    return [{ type: inp(c, 0).type, dims: unpoolDims(c).out }];
  },
  evaluate: (c, x) => {
    const { dims, out: outDims } = unpoolDims(c);
    const out = new Float64Array(numelOf(outDims));
    x[1]!.data.forEach((at, i) => {
      if (at < 0 || at >= numelOf(dims))
        throw fail(c, `index ${at} is outside the output`, 'TANDEM_ERR_BAD_DATA');
      // The coordinates of `at` in the unpooled dims, placed at the same coordinates of the output.
      let [rest, o, inside] = [at, 0, true];
      for (let d = 0; d < dims.length; d++) {
        const stride = numelOf(dims.slice(d + 1));
        const v = Math.floor(rest / stride);
        rest -= v * stride;
        inside &&= v < outDims[d]!;
        o = o * outDims[d]! + v;
      }
      if (inside) out[o] = x[0]!.data[i]!;
    });
    return [make(x[0]!.type, outDims, out)];
  },
  lower: (c, t) => {
    const [x, idx, y] = [t.input(0), t.input(1), t.output(0)];
    const n = numelOf(x.shape);
    const { dims, out } = unpoolDims(c);
    const flat = t.scratch([numelOf(dims)], y);
    t.submit('fill', { y: flat }, { value: 0 });
    const [i1, x1] = [t.scratch([n], idx), t.scratch([n], x)];
    t.submit('copy', { x: idx, y: i1 });
    t.submit('copy', { x, y: x1 });
    t.submit('onnx_scatter_elements', { indices: i1, updates: x1, y: flat }, { axis: 0, reduction: 'none' });
    if (dims.join() === out.join()) return t.submit('copy', { x: flat, y });
    const full = t.scratch(dims, y);
    t.submit('copy', { x: flat, y: full });
    const pads = [...dims.map(() => 0), ...out.map((d, i) => d - dims[i]!)];
    t.submit('onnx_pad', { x: full, y }, { mode: 'constant', pads: pads.join(','), value: 0 });
  },
};

export const UNPOOL_OPS: Record<string, OpImpl> = { MaxUnpool: maxUnpoolImpl };
