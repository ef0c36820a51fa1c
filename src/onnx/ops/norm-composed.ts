/**
 * Celu, MeanVarianceNormalization and LRN composed from existing kernels (their ONNX function bodies):
 *   - Celu(x) = α·elu(x/α) as one onnx_map program;
 *   - MVN: (x − E[x]) / (√(E[x²] − E[x]²) + 1e-9) over `axes` with onnx_reduce means (keepdims) and
 *     broadcasting onnx_binary;
 *   - LRN: the window sum of x² across channels as an onnx_pool average over a [N, 1, C, rest] view
 *     (pads counted, times size), then x / (bias + α/size·sum)^β with onnx_map and onnx_binary.
 * The float64 evaluations are direct loops over the definitions.
 */
import { numelOf, roundTo, type HostTensor } from '../host-tensor.js';
import { DeviceOps } from './compose.js';
import { fail, inp, make, normAxis, same } from './util.js';
import type { OpCall, OpImpl } from './types.js';

const round = (t: HostTensor, v: ArrayLike<number>) =>
  make(
    t.type,
    t.dims,
    Array.from(v, (e) => roundTo(t.type, e)),
  );

// ---- Celu

const celuAlpha = (c: OpCall) => c.attrs.float('alpha', 1);

const celuImpl: OpImpl = {
  infer: (c) => [same(c)],
  evaluate: (c, x) => {
    const a = celuAlpha(c);
    return [
      round(
        x[0]!,
        x[0]!.data.map((v) => Math.max(0, v) + Math.min(0, a * Math.expm1(v / a))),
      ),
    ];
  },
  lower: (c, t) => {
    const a = celuAlpha(c);
    t.submit(
      'onnx_map',
      { x: t.input(0), y: t.output(0) },
      { program: `mul(r0, ${1 / a}); elu(r1, 1); mul(r2, ${a})` },
    );
  },
};

// ---- MeanVarianceNormalization

function mvnAxes(c: OpCall): number[] {
  const rank = inp(c, 0).dims.length;
  const axes = (c.attrs.ints('axes') ?? [0, 2, 3]).map((a) => normAxis(c, a, rank));
  return [...new Set(axes)].sort((p, q) => p - q);
}

const mvnImpl: OpImpl = {
  infer: (c) => {
    mvnAxes(c);
    return [same(c)];
  },
  evaluate: (c, x) => {
    const t = x[0]!;
    const axes = mvnAxes(c);
    // Each element's group: its coordinates off the reduced axes.
    const strides = t.dims.map((_, i) => numelOf(t.dims.slice(i + 1)));
    const group = (e: number) =>
      t.dims.reduce((g, d, i) => (axes.includes(i) ? g : g * d + (Math.floor(e / strides[i]!) % d)), 0);
    const groups = numelOf(t.dims.filter((_, i) => !axes.includes(i)));
    const count = t.data.length / groups;
    const [s1, s2] = [new Float64Array(groups), new Float64Array(groups)];
    t.data.forEach((v, e) => {
      s1[group(e)] += v;
      s2[group(e)] += v * v;
    });
    const out = t.data.map((v, e) => {
      const g = group(e);
      const mean = s1[g]! / count;
      return (v - mean) / (Math.sqrt(s2[g]! / count - mean * mean) + 1e-9);
    });
    return [round(t, out)];
  },
  lower: (c, t) => {
    const x = t.input(0);
    const o = new DeviceOps(t, x);
    const axes = mvnAxes(c);
    const kept = x.shape.map((d, i) => (axes.includes(i) ? 1 : d));
    const mean = (v: typeof x) => {
      const y = o.tmp(kept);
      t.submit('onnx_reduce', { x: v, y }, { op: 'mean', axes: axes.join(','), keepdims: true });
      return y;
    };
    const m = mean(x);
    const variance = o.binary('sub', mean(o.binary('mul', x, x)), o.binary('mul', m, m));
    const std = o.map('sqrt(r0); add(r1, 1e-9)', variance);
    o.binary('div', o.binary('sub', x, m), std, t.output(0));
  },
};

// ---- LRN

function lrnSpec(c: OpCall) {
  const dims = inp(c, 0).dims;
  if (dims.length < 3) throw fail(c, `the input must be [N, C, d1 …], got rank ${dims.length}`);
  const size = c.attrs.int('size');
  if (size < 1) throw fail(c, `size ${size} must be ≥ 1`, 'TANDEM_ERR_BAD_DATA');
  return {
    size,
    alpha: c.attrs.float('alpha', 1e-4),
    beta: c.attrs.float('beta', 0.75),
    bias: c.attrs.float('bias', 1),
    lo: Math.floor((size - 1) / 2),
    hi: Math.ceil((size - 1) / 2),
  };
}

const lrnImpl: OpImpl = {
  infer: (c) => {
    lrnSpec(c);
    return [same(c)];
  },
  evaluate: (c, x) => {
    const s = lrnSpec(c);
    const t = x[0]!;
    const [n, ch] = [t.dims[0]!, t.dims[1]!];
    const rest = numelOf(t.dims.slice(2));
    const out = new Float64Array(t.data.length);
    for (let b = 0; b < n; b++)
      for (let k = 0; k < ch; k++)
        for (let i = 0; i < rest; i++) {
          let sum = 0;
          for (let j = Math.max(0, k - s.lo); j <= Math.min(ch - 1, k + s.hi); j++)
            sum += t.data[(b * ch + j) * rest + i]! ** 2;
          const v = t.data[(b * ch + k) * rest + i]!;
          out[(b * ch + k) * rest + i] = v / (s.bias + (s.alpha / s.size) * sum) ** s.beta;
        }
    return [round(t, out)];
  },
  lower: (c, t) => {
    const s = lrnSpec(c);
    const x = t.input(0);
    const o = new DeviceOps(t, x);
    const [n, ch] = [x.shape[0]!, x.shape[1]!];
    const rest = numelOf(x.shape.slice(2));
    const sq = o.reshape(o.binary('mul', x, x), [n, 1, ch, rest]);
    const avg = o.tmp([n, 1, ch, rest]);
    t.submit(
      'onnx_pool',
      { x: sq, y: avg },
      {
        op: 'avg',
        kernel: `${s.size},1`,
        strides: '1,1',
        dilations: '1,1',
        pads: `${s.lo},0,${s.hi},0`,
        countIncludePad: true,
      },
    );
    // α/size·Σ = α·average (the average over `size` cells, padding counted as zeros).
    const den = o.map(`mul(r0, ${s.alpha}); add(r1, ${s.bias}); pow(r2, ${s.beta})`, avg);
    o.binary('div', x, o.reshape(den, x.shape), t.output(0));
  },
};

export const NORM_COMPOSED_OPS: Record<string, OpImpl> = {
  Celu: celuImpl,
  MeanVarianceNormalization: mvnImpl,
  LRN: lrnImpl,
};
