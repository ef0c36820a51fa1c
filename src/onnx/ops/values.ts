/**
 * Operators that make values rather than move them: Shape, Size and EyeLike (dims only), Constant,
 * ConstantOfShape and Range (host values), Tile (onnx_expand on device), and Pad (onnx_pad on device).
 */
import { elemTypeOf, numelOf, type ElemType, type HostTensor } from '../host-tensor.js';
import { fail, hostInts, inp, make, normAxis, optHostInts, stridesOf } from './util.js';
import type { OpCall, OpImpl } from './types.js';

const shapeImpl: OpImpl = {
  shapeOnly: true,
  infer: (c) => [{ type: 'int64', dims: [shapeSlice(c).length] }],
  evaluate: (c) => [make('int64', [shapeSlice(c).length], shapeSlice(c))],
};

function shapeSlice(c: OpCall): number[] {
  const d = inp(c, 0).dims;
  const r = d.length;
  const clamp = (v: number): number => Math.min(Math.max(v < 0 ? v + r : v, 0), r);
  return [...d.slice(clamp(c.attrs.int('start', 0)), clamp(c.attrs.int('end', r)))];
}

const sizeImpl: OpImpl = {
  shapeOnly: true,
  infer: () => [{ type: 'int64', dims: [] }],
  evaluate: (c) => [make('int64', [], [numelOf(inp(c, 0).dims)])],
};

function constantValue(c: OpCall): HostTensor {
  const t = c.attrs.tensor('value');
  if (t) return t;
  if (c.attrs.has('value_float')) return make('float', [], [c.attrs.float('value_float', 0)]);
  if (c.attrs.has('value_int')) return make('int64', [], [c.attrs.int('value_int')]);
  const fs = c.attrs.floats('value_floats');
  if (fs) return make('float', [fs.length], fs);
  const is = c.attrs.ints('value_ints');
  if (is) return make('int64', [is.length], is);
  throw fail(
    c,
    'Constant has no value this loader reads (value, value_float(s), value_int(s))',
    'TANDEM_ERR_UNSUPPORTED',
  );
}

const constantImpl: OpImpl = {
  infer: (c) => [{ type: constantValue(c).type, dims: constantValue(c).dims }],
  evaluate: (c) => [constantValue(c)],
};

const constantOfShapeImpl: OpImpl = {
  hostInputs: [0],
  infer: (c) => {
    const v = c.attrs.tensor('value');
    return [{ type: v?.type ?? 'float', dims: hostInts(c, 0, 'shape') }];
  },
  evaluate: (c) => {
    const v = c.attrs.tensor('value');
    const dims = hostInts(c, 0, 'shape');
    return [make(v?.type ?? 'float', dims, new Float64Array(numelOf(dims)).fill(v?.data[0] ?? 0))];
  },
};

const rangeImpl: OpImpl = {
  hostInputs: [0, 1, 2],
  infer: (c) => [{ type: inp(c, 0).type, dims: [rangeValues(c).length] }],
  evaluate: (c) => [make(inp(c, 0).type, [rangeValues(c).length], rangeValues(c))],
};

function rangeValues(c: OpCall): number[] {
  const [start, limit, delta] = [
    hostInts(c, 0, 'start')[0]!,
    hostInts(c, 1, 'limit')[0]!,
    hostInts(c, 2, 'delta')[0]!,
  ];
  const n = Math.max(Math.ceil((limit - start) / delta), 0);
  if (!Number.isFinite(n) || n > 1 << 24) throw fail(c, 'Range is empty-stepped or too long');
  return Array.from({ length: n }, (_, i) => start + i * delta);
}

function padSpec(c: OpCall): { pads: number[]; value: number; mode: string } {
  const r = inp(c, 0).dims.length;
  const mode = c.attrs.string('mode', 'constant');
  if (c.opset < 11)
    return { pads: [...(c.attrs.ints('pads') ?? [])], value: c.attrs.float('value', 0), mode };
  let pads = hostInts(c, 1, 'pads');
  const value = c.inputs[2] ? (hostInts(c, 2, 'constant_value')[0] ?? 0) : 0;
  const axes = optHostInts(c, 3, 'axes');
  if (axes) {
    const full = new Array<number>(2 * r).fill(0);
    axes.forEach((a, i) => {
      const k = normAxis(c, a, r);
      full[k] = pads[i]!;
      full[k + r] = pads[i + axes.length]!;
    });
    pads = full;
  }
  if (pads.length !== 2 * r) throw fail(c, `pads has ${pads.length} values, rank ${r} needs ${2 * r}`);
  return { pads, value, mode };
}

const padImpl: OpImpl = {
  hostInputs: [1, 2, 3],
  infer: (c) => {
    const { pads } = padSpec(c);
    const d = inp(c, 0).dims;
    return [{ type: inp(c, 0).type, dims: d.map((v, i) => v + pads[i]! + pads[i + d.length]!) }];
  },
  evaluate: (c, x) => {
    const { pads, value, mode } = padSpec(c);
    const src = x[0]!;
    const r = src.dims.length;
    const dims = src.dims.map((v, i) => v + pads[i]! + pads[i + r]!);
    const ss = stridesOf(src.dims);
    const out = new Float64Array(numelOf(dims));
    const idx = new Array<number>(r).fill(0);
    for (let e = 0; e < out.length; e++) {
      let off = 0;
      let inside = true;
      for (let d = 0; d < r; d++) {
        let k = idx[d]! - pads[d]!;
        const n = src.dims[d]!;
        if (k < 0 || k >= n) {
          if (mode === 'edge') k = k < 0 ? 0 : n - 1;
          else if (mode === 'reflect') k = k < 0 ? -k : 2 * (n - 1) - k;
          else inside = false;
        }
        off += k * ss[d]!;
      }
      out[e] = inside ? src.data[off]! : value;
      for (let d = r - 1; d >= 0; d--) {
        if (++idx[d]! < dims[d]!) break;
        idx[d] = 0;
      }
    }
    return [make(src.type, dims, out)];
  },
  lower: (c, t) => {
    const { pads, value, mode } = padSpec(c);
    t.submit('onnx_pad', { x: t.input(0), y: t.output(0) }, { mode, pads: pads.join(','), value });
  },
};

const tileImpl: OpImpl = {
  hostInputs: [1],
  infer: (c) => [
    { type: inp(c, 0).type, dims: inp(c, 0).dims.map((d, i) => d * hostInts(c, 1, 'repeats')[i]!) },
  ],
  evaluate: (c, x) => {
    const dims = tileImpl.infer(c)[0]!.dims;
    const src = x[0]!;
    const ss = stridesOf(src.dims);
    const os = stridesOf(dims);
    const out = new Float64Array(numelOf(dims));
    for (let e = 0; e < out.length; e++) {
      let off = 0;
      for (let d = 0; d < dims.length; d++)
        off += ((Math.floor(e / os[d]!) % dims[d]!) % src.dims[d]!) * ss[d]!;
      out[e] = src.data[off]!;
    }
    return [make(src.type, dims, out)];
  },
  // On device data, one repeated axis at a time: the tensor viewed as [outer, 1, d, inner], onnx_expand
  // to [outer, r, d, inner], which holds the tensor tiled r times along that axis.
  lower: (c, t) => {
    const reps = hostInts(c, 1, 'repeats');
    let x = t.input(0);
    const dims = [...x.shape];
    const axes = reps.map((r, i) => (r === 1 ? -1 : i)).filter((i) => i >= 0);
    if (axes.length === 0) return t.submit('copy', { x, y: t.output(0) });
    for (const [k, i] of axes.entries()) {
      const [outer, inner] = [numelOf(dims.slice(0, i)), numelOf(dims.slice(i + 1))];
      const v = t.scratch([outer, 1, dims[i]!, inner], x);
      t.submit('copy', { x, y: v });
      dims[i] = dims[i]! * reps[i]!;
      const last = k === axes.length - 1;
      const e = t.scratch([outer, reps[i]!, v.shape[2]!, inner], x);
      t.submit('onnx_expand', { x: v, y: e });
      if (last) t.submit('copy', { x: e, y: t.output(0) });
      x = e;
    }
  },
};

/** EyeLike: ones on diagonal k of a 2-d tensor shaped as the input (dims only), in `dtype` or its type. */
function eyeLikeSpec(c: OpCall): { type: ElemType; dims: readonly number[]; k: number } {
  const dims = inp(c, 0).dims;
  if (dims.length !== 2) throw fail(c, `the input must be 2-d, got rank ${dims.length}`);
  const type = c.attrs.has('dtype')
    ? elemTypeOf(c.attrs.int('dtype'), `EyeLike node '${c.node.name}'`)
    : inp(c, 0).type;
  if (type === 'string' || type === 'complex64' || type === 'complex128')
    throw fail(c, `element type ${type} is not supported`, 'TANDEM_ERR_UNSUPPORTED');
  return { type, dims, k: c.attrs.int('k', 0) };
}

const eyeLikeImpl: OpImpl = {
  shapeOnly: true,
  infer: (c) => [{ type: eyeLikeSpec(c).type, dims: eyeLikeSpec(c).dims }],
  evaluate: (c) => {
    const { type, dims, k } = eyeLikeSpec(c);
    const [rows, cols] = dims as [number, number];
    const out = new Float64Array(rows * cols);
    for (let i = 0; i < rows; i++) if (i + k >= 0 && i + k < cols) out[i * cols + i + k] = 1;
    return [make(type, dims, out)];
  },
};

export const VALUE_OPS: Record<string, OpImpl> = {
  Shape: shapeImpl,
  Size: sizeImpl,
  Constant: constantImpl,
  ConstantOfShape: constantOfShapeImpl,
  Range: rangeImpl,
  Pad: padImpl,
  Tile: tileImpl,
  EyeLike: eyeLikeImpl,
};
