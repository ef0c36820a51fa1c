/**
 * Convolution and pooling (1-d and 2-d spatial, NCHW; a 1-d [N,C,L] tensor is run as [N,C,1,L]):
 * Conv, ConvTranspose, MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool. auto_pad is resolved to
 * explicit pads here, so the kernels only ever see (top, left, bottom, right).
 */
import type { Tensor } from '../../memory/tensor.js';
import { numelOf, type HostTensor } from '../host-tensor.js';
import { fail, inp, make } from './util.js';
import type { LowerTarget, OpCall, OpImpl } from './types.js';

/** 2-d window geometry; for 1-d ops the H axis is a unit axis. */
interface Geo {
  kh: number;
  kw: number;
  sh: number;
  sw: number;
  dh: number;
  dw: number;
  top: number;
  left: number;
  bottom: number;
  right: number;
  /** Spatial rank of the ONNX op (1 or 2). */
  rank: number;
}

function two(c: OpCall, v: readonly number[] | undefined, rank: number, dflt: number): [number, number] {
  if (!v) return [dflt, dflt];
  if (v.length !== rank) throw fail(c, `an attribute has ${v.length} values for ${rank} spatial axes`);
  return rank === 1 ? [dflt === 0 ? 0 : 1, v[0]!] : [v[0]!, v[1]!];
}

function spatialRank(c: OpCall): number {
  const r = inp(c, 0).dims.length - 2;
  if (r !== 1 && r !== 2)
    throw fail(c, `${r}-d spatial inputs are not supported (1-d and 2-d are)`, 'TANDEM_ERR_UNSUPPORTED');
  return r;
}

function hw(dims: readonly number[], rank: number): [number, number] {
  return rank === 1 ? [1, dims[2]!] : [dims[2]!, dims[3]!];
}

function geometry(c: OpCall, kernel: readonly number[], inHW: [number, number], transposed = false): Geo {
  const rank = spatialRank(c);
  const [kh, kw] = rank === 1 ? [1, kernel[0]!] : [kernel[0]!, kernel[1]!];
  const [sh, sw] = two(c, c.attrs.ints('strides'), rank, 1);
  const [dh, dw] = two(c, c.attrs.ints('dilations'), rank, 1);
  let pads = c.attrs.ints('pads') ?? new Array<number>(2 * rank).fill(0);
  if (pads.length !== 2 * rank) throw fail(c, `pads has ${pads.length} values for ${rank} spatial axes`);
  const autoPad = c.attrs.string('auto_pad', 'NOTSET');
  if (autoPad === 'VALID') pads = new Array<number>(2 * rank).fill(0);
  else if (autoPad === 'SAME_UPPER' || autoPad === 'SAME_LOWER') {
    // ConvTranspose's SAME: the output is in·stride, its pads follow as for output_shape (below).
    if (transposed) return { rank, kh, kw, sh, sw, dh, dw, top: 0, bottom: 0, left: 0, right: 0 };
    const ins = rank === 1 ? [inHW[1]] : inHW;
    const ks = rank === 1 ? [kw] : [kh, kw];
    const ss = rank === 1 ? [sw] : [sh, sw];
    const ds = rank === 1 ? [dw] : [dh, dw];
    const begin: number[] = [];
    const end: number[] = [];
    ins.forEach((n, i) => {
      const out = Math.ceil(n / ss[i]!);
      const total = Math.max(0, (out - 1) * ss[i]! + (ks[i]! - 1) * ds[i]! + 1 - n);
      const small = Math.floor(total / 2);
      begin.push(autoPad === 'SAME_UPPER' ? small : total - small);
      end.push(autoPad === 'SAME_UPPER' ? total - small : small);
    });
    pads = [...begin, ...end];
  } else if (autoPad !== 'NOTSET') throw fail(c, `auto_pad ${autoPad} is not valid`, 'TANDEM_ERR_BAD_DATA');
  const [top, bottom, left, right] =
    rank === 1 ? [0, 0, pads[0]!, pads[1]!] : [pads[0]!, pads[2]!, pads[1]!, pads[3]!];
  return { kh, kw, sh, sw, dh, dw, top, left, bottom, right, rank };
}

function outSize(n: number, k: number, s: number, d: number, p0: number, p1: number, ceil = false): number {
  const span = n + p0 + p1 - d * (k - 1) - 1;
  let o = (ceil ? Math.ceil(span / s) : Math.floor(span / s)) + 1;
  // A last window that starts inside the end padding is dropped (ONNX Runtime / PyTorch rule).
  if (ceil && (o - 1) * s >= n + p0) o--;
  return o;
}

function outDims(c: OpCall, n: number, ch: number, g: Geo, inHW: [number, number], ceil = false): number[] {
  const ho = outSize(inHW[0], g.kh, g.sh, g.dh, g.top, g.bottom, ceil);
  const wo = outSize(inHW[1], g.kw, g.sw, g.dw, g.left, g.right, ceil);
  if (ho < 1 || wo < 1) throw fail(c, `the output would be empty (${ho}×${wo})`);
  return g.rank === 1 ? [n, ch, wo] : [n, ch, ho, wo];
}

export const str = (g: Geo) => ({
  strides: `${g.sh},${g.sw}`,
  dilations: `${g.dh},${g.dw}`,
  pads: `${g.top},${g.left},${g.bottom},${g.right}`,
});

/** The tensor as the 2-d kernels see it: a 1-d op's [N,C,L] is a copy into [N,C,1,L]. */
export function as4d(t: LowerTarget, x: ReturnType<LowerTarget['input']>, rank: number) {
  if (rank === 2) return x;
  const v = t.scratch([x.shape[0]!, x.shape[1]!, 1, x.shape[2]!], x);
  t.submit('copy', { x, y: v });
  return v;
}

/** onnx_conv's activation scalars for an activation the planner fused into this node. */
function fusedActivation(c: OpCall): Record<string, number | string> {
  const a = c.activation;
  if (!a) return c.epilogue ? { epilogue: c.epilogue } : {};
  const named: Record<string, string> = {
    op: 'activation',
    alpha: 'activationAlpha',
    beta: 'activationBeta',
    min: 'activationMin',
    max: 'activationMax',
  };
  const act = Object.fromEntries(Object.entries(a).map(([k, v]) => [named[k] ?? k, v]));
  return c.epilogue ? { ...act, epilogue: c.epilogue } : act;
}

function convGeo(c: OpCall): Geo {
  const w = inp(c, 1).dims;
  return geometry(c, c.attrs.ints('kernel_shape') ?? w.slice(2), hw(inp(c, 0).dims, spatialRank(c)));
}

export function convOut(c: OpCall): number[] {
  const [x, w] = [inp(c, 0).dims, inp(c, 1).dims];
  const group = c.attrs.int('group', 1);
  if (x[1] !== w[1]! * group || w[0]! % group !== 0)
    throw fail(c, `x [${x.join(', ')}] and w [${w.join(', ')}] do not match for group ${group}`);
  if (c.inputs[2] && (inp(c, 2).dims.length !== 1 || inp(c, 2).dims[0] !== w[0]))
    throw fail(c, `bias must be [${w[0]}]`);
  return outDims(c, x[0]!, w[0]!, convGeo(c), hw(x, spatialRank(c)));
}

export function convEval(c: OpCall, x: HostTensor, w: HostTensor, b: HostTensor | undefined): HostTensor {
  const g = convGeo(c);
  const dims = convOut(c);
  const [n, ci] = [x.dims[0]!, x.dims[1]!];
  const [h, wd] = hw(x.dims, g.rank);
  const co = w.dims[0]!;
  const group = c.attrs.int('group', 1);
  const cig = ci / group;
  const cog = co / group;
  const [ho, wo] = g.rank === 1 ? [1, dims[2]!] : [dims[2]!, dims[3]!];
  const out = new Float64Array(numelOf(dims));
  for (let bi = 0; bi < n; bi++)
    for (let o = 0; o < co; o++) {
      const gi = Math.floor(o / cog);
      for (let oy = 0; oy < ho; oy++)
        for (let ox = 0; ox < wo; ox++) {
          let s = b ? b.data[o]! : 0;
          for (let cc = 0; cc < cig; cc++) {
            const xc = gi * cig + cc;
            for (let ky = 0; ky < g.kh; ky++) {
              const iy = oy * g.sh - g.top + ky * g.dh;
              if (iy < 0 || iy >= h) continue;
              for (let kx = 0; kx < g.kw; kx++) {
                const ix = ox * g.sw - g.left + kx * g.dw;
                if (ix < 0 || ix >= wd) continue;
                s +=
                  x.data[((bi * ci + xc) * h + iy) * wd + ix]! *
                  w.data[((o * cig + cc) * g.kh + ky) * g.kw + kx]!;
              }
            }
          }
          out[((bi * co + o) * ho + oy) * wo + ox] = s;
        }
    }
  return make(x.type, dims, out);
}

export function zeroBias(t: LowerTarget, n: number, like: ReturnType<LowerTarget['input']>) {
  const b = t.scratch([n], like);
  t.submit('fill', { y: b }, { value: 0 });
  return b;
}

/** onnx_conv with the node's geometry on the given device tensors (also the integer convolutions' f64 operands). */
export function submitConv(c: OpCall, t: LowerTarget, x0: Tensor, w: Tensor, b: Tensor, y: Tensor): void {
  const g = convGeo(c);
  const x = as4d(t, x0, g.rank);
  const w4 = as4d(t, w, g.rank);
  const y4 = g.rank === 2 ? y : t.scratch([y.shape[0]!, y.shape[1]!, 1, y.shape[2]!], y);
  t.submit(
    'onnx_conv',
    { x, w: w4, b, y: y4 },
    {
      group: c.attrs.int('group', 1),
      ...str(g),
      ...fusedActivation(c),
      ...(t.gemmPrecision === 'tf32' && y.dtype === 'f32' ? { precision: 'tf32' } : {}),
    },
  );
  if (y4 !== y) t.submit('copy', { x: y4, y });
}

const convImpl: OpImpl = {
  infer: (c) => [{ type: inp(c, 0).type, dims: convOut(c) }],
  evaluate: (c, x) => [convEval(c, x[0]!, x[1]!, x[2])],
  lower: (c, t) => {
    const w = t.input(1);
    const b = c.inputs[2] ? t.input(2) : zeroBias(t, w.shape[0]!, w);
    submitConv(c, t, t.input(0), w, b, t.output(0));
  },
};

function convTransposeSpec(c: OpCall): { g: Geo; dims: number[]; outPad: [number, number] } {
  const [x, w] = [inp(c, 0).dims, inp(c, 1).dims];
  const rank = spatialRank(c);
  const group = c.attrs.int('group', 1);
  if (x[1] !== w[0]) throw fail(c, `x has ${x[1]} channels, w [${w.join(', ')}] expects ${w[0]}`);
  const g = geometry(c, c.attrs.ints('kernel_shape') ?? w.slice(2), hw(x, rank), true);
  let outPad = two(c, c.attrs.ints('output_padding'), rank, 0);
  const [h, wd] = hw(x, rank);
  const full = (n: number, s: number, k: number, d: number, op: number) => s * (n - 1) + op + d * (k - 1) + 1;
  const autoPad = c.attrs.string('auto_pad', 'NOTSET');
  const same = autoPad === 'SAME_UPPER' || autoPad === 'SAME_LOWER';
  const shape =
    c.attrs.ints('output_shape') ??
    (same ? x.slice(2).map((n, i) => n * (rank === 1 ? g.sw : [g.sh, g.sw][i]!)) : undefined);
  if (shape) {
    // Explicit output shape: the pads follow from it (SAME_UPPER-style split, as ONNX specifies).
    const want = rank === 1 ? [1, shape[shape.length - 1]!] : shape.slice(-2);
    const tot = [
      full(h, g.sh, g.kh, g.dh, outPad[0]) - want[0]!,
      full(wd, g.sw, g.kw, g.dw, outPad[1]) - want[1]!,
    ];
    if (tot.some((v) => v < 0)) {
      outPad = [outPad[0] + Math.max(0, -tot[0]!), outPad[1] + Math.max(0, -tot[1]!)];
      tot[0] = Math.max(0, tot[0]!);
      tot[1] = Math.max(0, tot[1]!);
    }
    const upper = autoPad !== 'SAME_LOWER';
    [g.top, g.bottom] = upper
      ? [Math.floor(tot[0]! / 2), tot[0]! - Math.floor(tot[0]! / 2)]
      : [tot[0]! - Math.floor(tot[0]! / 2), Math.floor(tot[0]! / 2)];
    [g.left, g.right] = upper
      ? [Math.floor(tot[1]! / 2), tot[1]! - Math.floor(tot[1]! / 2)]
      : [tot[1]! - Math.floor(tot[1]! / 2), Math.floor(tot[1]! / 2)];
  }
  const ho = full(h, g.sh, g.kh, g.dh, outPad[0]) - g.top - g.bottom;
  const wo = full(wd, g.sw, g.kw, g.dw, outPad[1]) - g.left - g.right;
  if (ho < 1 || wo < 1) throw fail(c, 'the output would be empty');
  const co = w[1]! * group;
  return { g, outPad, dims: rank === 1 ? [x[0]!, co, wo] : [x[0]!, co, ho, wo] };
}

const convTransposeImpl: OpImpl = {
  infer: (c) => [{ type: inp(c, 0).type, dims: convTransposeSpec(c).dims }],
  evaluate: (c, xs) => {
    const { g, dims } = convTransposeSpec(c);
    const [x, w, b] = [xs[0]!, xs[1]!, xs[2]];
    const group = c.attrs.int('group', 1);
    const [n, ci] = [x.dims[0]!, x.dims[1]!];
    const [h, wd] = hw(x.dims, g.rank);
    const cog = w.dims[1]!;
    const co = cog * group;
    const cig = ci / group;
    const [ho, wo] = g.rank === 1 ? [1, dims[2]!] : [dims[2]!, dims[3]!];
    const out = new Float64Array(numelOf(dims));
    for (let bi = 0; bi < n; bi++)
      for (let o = 0; o < co; o++)
        out.fill(b ? b.data[o]! : 0, (bi * co + o) * ho * wo, (bi * co + o + 1) * ho * wo);
    for (let bi = 0; bi < n; bi++)
      for (let ic = 0; ic < ci; ic++) {
        const gi = Math.floor(ic / cig);
        for (let iy = 0; iy < h; iy++)
          for (let ix = 0; ix < wd; ix++) {
            const v = x.data[((bi * ci + ic) * h + iy) * wd + ix]!;
            for (let oc = 0; oc < cog; oc++)
              for (let ky = 0; ky < g.kh; ky++) {
                const oy = iy * g.sh - g.top + ky * g.dh;
                if (oy < 0 || oy >= ho) continue;
                for (let kx = 0; kx < g.kw; kx++) {
                  const ox = ix * g.sw - g.left + kx * g.dw;
                  if (ox < 0 || ox >= wo) continue;
                  out[((bi * co + gi * cog + oc) * ho + oy) * wo + ox]! +=
                    v * w.data[((ic * cog + oc) * g.kh + ky) * g.kw + kx]!;
                }
              }
          }
      }
    return [make(x.type, dims, out)];
  },
  lower: (c, t) => {
    const { g, outPad } = convTransposeSpec(c);
    const w = t.input(1);
    const x = as4d(t, t.input(0), g.rank);
    const w4 = as4d(t, w, g.rank);
    const co = w.shape[1]! * c.attrs.int('group', 1);
    const b = c.inputs[2] ? t.input(2) : zeroBias(t, co, w);
    const y = t.output(0);
    const y4 = g.rank === 2 ? y : t.scratch([y.shape[0]!, y.shape[1]!, 1, y.shape[2]!], y);
    t.submit(
      'onnx_conv_transpose',
      { x, w: w4, b, y: y4 },
      {
        group: c.attrs.int('group', 1),
        outputPadding: `${outPad[0]},${outPad[1]}`,
        ...str(g),
        ...fusedActivation(c),
      },
    );
    if (y4 !== y) t.submit('copy', { x: y4, y });
  },
};

/** Pool geometry; storage_order only orders MaxPool's Indices (maxpool-indices.ts), not the values. */
export function poolSpec(c: OpCall): { g: Geo; dims: number[]; ceil: boolean } {
  const x = inp(c, 0).dims;
  const rank = spatialRank(c);
  const k = c.attrs.ints('kernel_shape');
  if (!k) throw fail(c, 'kernel_shape is required', 'TANDEM_ERR_BAD_DATA');
  const ceil = c.attrs.int('ceil_mode', 0) === 1;
  const g = geometry(c, k, hw(x, rank));
  return { g, ceil, dims: outDims(c, x[0]!, x[1]!, g, hw(x, rank), ceil) };
}

function poolImpl(op: 'max' | 'avg'): OpImpl {
  return {
    infer: (c) => [{ type: inp(c, 0).type, dims: poolSpec(c).dims }],
    evaluate: (c, xs) => {
      const { g, dims } = poolSpec(c);
      const x = xs[0]!;
      const includePad = c.attrs.int('count_include_pad', 0) === 1;
      const [n, ch] = [x.dims[0]!, x.dims[1]!];
      const [h, w] = hw(x.dims, g.rank);
      const [ho, wo] = g.rank === 1 ? [1, dims[2]!] : [dims[2]!, dims[3]!];
      const out = new Float64Array(numelOf(dims));
      for (let p = 0; p < n * ch; p++)
        for (let oy = 0; oy < ho; oy++)
          for (let ox = 0; ox < wo; ox++) {
            let acc = op === 'max' ? -Infinity : 0;
            let cnt = 0;
            let padCnt = 0;
            for (let ky = 0; ky < g.kh; ky++) {
              const iy = oy * g.sh - g.top + ky * g.dh;
              for (let kx = 0; kx < g.kw; kx++) {
                const ix = ox * g.sw - g.left + kx * g.dw;
                if (iy >= -g.top && iy < h + g.bottom && ix >= -g.left && ix < w + g.right) padCnt++;
                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                const v = x.data[(p * h + iy) * w + ix]!;
                if (op === 'max') acc = v !== v || acc !== acc ? NaN : Math.max(acc, v);
                else acc += v;
                cnt++;
              }
            }
            out[(p * ho + oy) * wo + ox] = op === 'max' ? acc : acc / (includePad ? padCnt : cnt);
          }
      return [make(x.type, dims, out)];
    },
    lower: (c, t) => {
      const { g, ceil } = poolSpec(c);
      const x = as4d(t, t.input(0), g.rank);
      const y = t.output(0);
      const y4 = g.rank === 2 ? y : t.scratch([y.shape[0]!, y.shape[1]!, 1, y.shape[2]!], y);
      t.submit(
        'onnx_pool',
        { x, y: y4 },
        {
          op,
          kernel: `${g.kh},${g.kw}`,
          ceilMode: ceil,
          countIncludePad: c.attrs.int('count_include_pad', 0) === 1,
          ...str(g),
        },
      );
      if (y4 !== y) t.submit('copy', { x: y4, y });
    },
  };
}

function globalPoolImpl(op: 'max' | 'avg'): OpImpl {
  const dimsOf = (c: OpCall): number[] => inp(c, 0).dims.map((d, i) => (i < 2 ? d : 1));
  return {
    infer: (c) => {
      if (inp(c, 0).dims.length < 3) throw fail(c, 'the input needs a spatial axis');
      return [{ type: inp(c, 0).type, dims: dimsOf(c) }];
    },
    evaluate: (c, xs) => {
      const x = xs[0]!;
      const m = numelOf(x.dims.slice(2));
      const out = new Float64Array(x.dims[0]! * x.dims[1]!).map((_, p) => {
        let acc = op === 'max' ? -Infinity : 0;
        for (let i = 0; i < m; i++)
          acc = op === 'max' ? Math.max(acc, x.data[p * m + i]!) : acc + x.data[p * m + i]!;
        return op === 'max' ? acc : acc / m;
      });
      return [make(x.type, dimsOf(c), out)];
    },
    lower: (_c, t) => t.submit('onnx_global_pool', { x: t.input(0), y: t.output(0) }, { op }),
  };
}

export const CONV_OPS: Record<string, OpImpl> = {
  Conv: convImpl,
  ConvTranspose: convTransposeImpl,
  MaxPool: poolImpl('max'),
  AveragePool: poolImpl('avg'),
  GlobalAveragePool: globalPoolImpl('avg'),
  GlobalMaxPool: globalPoolImpl('max'),
};
