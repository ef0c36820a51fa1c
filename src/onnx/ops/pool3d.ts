/**
 * 3-d MaxPool and AveragePool ([N, C, D, H, W]) as two 2-d onnx_pool passes: over (H, W) on the
 * [N, C·D, H, W] view, then over D on the [N·C, 1, D, Ho·Wo] view with a (kd, 1) window. A box window
 * is separable for max, and for the average too: the cells counted (inside the image, or inside the
 * padded extent with count_include_pad) are a product of per-axis counts, so the mean over the box is
 * the mean over D of the means over (H, W). Each axis keeps its own pads, strides, dilations and ceil
 * rule. The float64 evaluation is the direct loop over the 3-d window.
 */
import { numelOf } from '../host-tensor.js';
import { maxpoolIndicesImpl, wantsIndices } from './maxpool-indices.js';
import { fail, inp, make } from './util.js';
import type { OpCall, OpImpl } from './types.js';

interface Axis {
  readonly k: number;
  readonly s: number;
  readonly d: number;
  readonly p0: number;
  readonly p1: number;
  readonly n: number;
  readonly out: number;
}

function axes(c: OpCall): Axis[] {
  const x = inp(c, 0).dims;
  const k = c.attrs.ints('kernel_shape');
  if (!k || k.length !== 3) throw fail(c, 'kernel_shape must list 3 sizes', 'TANDEM_ERR_BAD_DATA');
  const s = c.attrs.ints('strides') ?? [1, 1, 1];
  const d = c.attrs.ints('dilations') ?? [1, 1, 1];
  let p = c.attrs.ints('pads') ?? [0, 0, 0, 0, 0, 0];
  const ceil = c.attrs.int('ceil_mode', 0) === 1;
  const auto = c.attrs.string('auto_pad', 'NOTSET');
  if (auto === 'VALID') p = [0, 0, 0, 0, 0, 0];
  else if (auto === 'SAME_UPPER' || auto === 'SAME_LOWER') {
    const total = [0, 1, 2].map((i) => {
      const out = Math.ceil(x[i + 2]! / s[i]!);
      return Math.max(0, (out - 1) * s[i]! + (k[i]! - 1) * d[i]! + 1 - x[i + 2]!);
    });
    const small = total.map((v) => Math.floor(v / 2));
    p =
      auto === 'SAME_UPPER'
        ? [...small, ...total.map((v, i) => v - small[i]!)]
        : [...total.map((v, i) => v - small[i]!), ...small];
  } else if (auto !== 'NOTSET') throw fail(c, `auto_pad ${auto} is not valid`, 'TANDEM_ERR_BAD_DATA');
  return [0, 1, 2].map((i) => {
    const n = x[i + 2]!;
    const span = n + p[i]! + p[i + 3]! - d[i]! * (k[i]! - 1) - 1;
    let out = (ceil ? Math.ceil(span / s[i]!) : Math.floor(span / s[i]!)) + 1;
    // A last window starting in the end padding is dropped (ONNX Runtime / PyTorch).
    if (ceil && (out - 1) * s[i]! >= n + p[i]!) out--;
    if (out < 1) throw fail(c, 'the output would be empty');
    return { k: k[i]!, s: s[i]!, d: d[i]!, p0: p[i]!, p1: p[i + 3]!, n, out };
  });
}

function pool3dImpl(op: 'max' | 'avg'): OpImpl {
  const includePad = (c: OpCall) => c.attrs.int('count_include_pad', 0) === 1;
  return {
    infer: (c) => {
      if (op === 'max' && (c.node.outputs[1] ?? '') !== '')
        throw fail(c, "MaxPool's Indices output is not supported", 'TANDEM_ERR_UNSUPPORTED');
      const x = inp(c, 0).dims;
      return [{ type: inp(c, 0).type, dims: [x[0]!, x[1]!, ...axes(c).map((a) => a.out)] }];
    },
    evaluate: (c, xs) => {
      const a = axes(c);
      const x = xs[0]!;
      const planes = x.dims[0]! * x.dims[1]!;
      const dims = [x.dims[0]!, x.dims[1]!, ...a.map((v) => v.out)];
      const out = new Float64Array(numelOf(dims));
      // Per axis and output index: the input cells of the window, and how many cells the average counts.
      const cells = a.map((v) =>
        Array.from({ length: v.out }, (_, o) => {
          const at = Array.from({ length: v.k }, (_, j) => o * v.s - v.p0 + j * v.d);
          const inside = at.filter((i) => i >= 0 && i < v.n);
          const padded = at.filter((i) => i < v.n + v.p1).length;
          return { inside, count: includePad(c) ? padded : inside.length };
        }),
      );
      let e = 0;
      for (let p = 0; p < planes; p++)
        for (const wd of cells[0]!)
          for (const wh of cells[1]!)
            for (const ww of cells[2]!) {
              let acc = op === 'max' ? -Infinity : 0;
              for (const i of wd.inside)
                for (const j of wh.inside)
                  for (const k of ww.inside) {
                    const v = x.data[((p * a[0]!.n + i) * a[1]!.n + j) * a[2]!.n + k]!;
                    acc = op === 'max' ? (v !== v || acc !== acc ? NaN : Math.max(acc, v)) : acc + v;
                  }
              out[e++] = op === 'max' ? acc : acc / (wd.count * wh.count * ww.count);
            }
      return [make(x.type, dims, out)];
    },
    lower: (c, t) => {
      const [ad, ah, aw] = axes(c) as [Axis, Axis, Axis];
      const x = t.input(0);
      const [n, ch] = [x.shape[0]!, x.shape[1]!];
      const common = { op, ceilMode: c.attrs.int('ceil_mode', 0) === 1, countIncludePad: includePad(c) };
      const hw = t.scratch([n, ch * ad.n, ah.n, aw.n], x);
      t.submit('copy', { x, y: hw });
      const p1 = t.scratch([n, ch * ad.n, ah.out, aw.out], x);
      t.submit(
        'onnx_pool',
        { x: hw, y: p1 },
        {
          ...common,
          kernel: `${ah.k},${aw.k}`,
          strides: `${ah.s},${aw.s}`,
          dilations: `${ah.d},${aw.d}`,
          pads: `${ah.p0},${aw.p0},${ah.p1},${aw.p1}`,
        },
      );
      const dv = t.scratch([n * ch, 1, ad.n, ah.out * aw.out], x);
      t.submit('copy', { x: p1, y: dv });
      const p2 = t.scratch([n * ch, 1, ad.out, ah.out * aw.out], x);
      t.submit(
        'onnx_pool',
        { x: dv, y: p2 },
        {
          ...common,
          kernel: `${ad.k},1`,
          strides: `${ad.s},1`,
          dilations: `${ad.d},1`,
          pads: `${ad.p0},0,${ad.p1},0`,
        },
      );
      t.submit('copy', { x: p2, y: t.output(0) });
    },
  };
}

/**
 * The 2-d op for ranks 3–4 (MaxPool with its Indices output on onnx_maxpool_indices), the 3-d
 * composition for rank 5.
 */
export function withPool3d(op: 'max' | 'avg', flat: OpImpl): OpImpl {
  const deep = pool3dImpl(op);
  const pick = (c: OpCall) =>
    inp(c, 0).dims.length === 5 ? deep : op === 'max' && wantsIndices(c) ? maxpoolIndicesImpl : flat;
  return {
    infer: (c) => pick(c).infer(c),
    evaluate: (c, x) => pick(c).evaluate(c, x),
    lower: (c, t, outs) => pick(c).lower!(c, t, outs),
  };
}
