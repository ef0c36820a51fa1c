/**
 * Matrix products, normalizations, softmax and reductions: MatMul, Gemm, BatchNormalization,
 * LayerNormalization, Softmax, LogSoftmax, Reduce*.
 */
import { numelOf, type HostTensor } from '../host-tensor.js';
import { bnBatchStats, bnTraining, lowerBnTraining } from './batchnorm-training.js';
import { broadcastDims, broadcastTo, fail, inp, make, normAxis, optHostInts, stridesOf } from './util.js';
import type { OpCall, OpImpl } from './types.js';

/** MatMul's numpy semantics: 1-d operands are promoted and the added axis squeezed from the output. */
function matmulDims(c: OpCall): { a: number[]; b: number[]; out: number[]; full: number[] } {
  let a = [...inp(c, 0).dims];
  let b = [...inp(c, 1).dims];
  const a1 = a.length === 1;
  const b1 = b.length === 1;
  if (a1) a = [1, a[0]!];
  if (b1) b = [b[0]!, 1];
  if (a.length < 2 || b.length < 2 || a[a.length - 1] !== b[b.length - 2])
    throw fail(c, `[${inp(c, 0).dims.join(', ')}] × [${inp(c, 1).dims.join(', ')}] do not multiply`);
  const batch = broadcastDims(c, a.slice(0, -2), b.slice(0, -2));
  const full = [...batch, a[a.length - 2]!, b[b.length - 1]!];
  const out = full.filter((_, i) => !(a1 && i === full.length - 2) && !(b1 && i === full.length - 1));
  return { a, b, out, full };
}

const matmulImpl: OpImpl = {
  infer: (c) => [{ type: inp(c, 0).type, dims: matmulDims(c).out }],
  evaluate: (c, x) => {
    const { a, b, out, full } = matmulDims(c);
    const batch = full.slice(0, -2);
    const [m, n] = [full[full.length - 2]!, full[full.length - 1]!];
    const k = a[a.length - 1]!;
    const A = broadcastTo({ ...x[0]!, dims: a }, [...batch, m, k]);
    const B = broadcastTo({ ...x[1]!, dims: b }, [...batch, k, n]);
    const nb = numelOf(batch);
    const res = new Float64Array(nb * m * n);
    for (let p = 0; p < nb; p++)
      for (let i = 0; i < m; i++)
        for (let j = 0; j < n; j++) {
          let s = 0;
          for (let q = 0; q < k; q++) s += A[(p * m + i) * k + q]! * B[(p * k + q) * n + j]!;
          res[(p * m + i) * n + j] = s;
        }
    return [make(x[0]!.type, out, res)];
  },
  lower: (c, t) => {
    const { a, b, full } = matmulDims(c);
    const view = (i: number, dims: number[]) => {
      const x = t.input(i);
      if (x.shape.length === dims.length) return x;
      const v = t.scratch(dims, x);
      t.submit('copy', { x, y: v });
      return v;
    };
    const y = t.output(0);
    const y2 = y.shape.length === full.length ? y : t.scratch(full, y);
    t.submit('onnx_matmul', { a: view(0, a), b: view(1, b), c: y2 });
    if (y2 !== y) t.submit('copy', { x: y2, y });
  },
};

function gemmSpec(c: OpCall) {
  const [a, b] = [inp(c, 0).dims, inp(c, 1).dims];
  const transA = c.attrs.int('transA', 0) === 1;
  const transB = c.attrs.int('transB', 0) === 1;
  if (a.length !== 2 || b.length !== 2) throw fail(c, 'Gemm needs 2-d A and B');
  const [m, k] = transA ? [a[1]!, a[0]!] : [a[0]!, a[1]!];
  const [k2, n] = transB ? [b[1]!, b[0]!] : [b[0]!, b[1]!];
  if (k !== k2) throw fail(c, `inner sizes ${k} and ${k2} differ`);
  if (c.inputs[2]) broadcastDims(c, inp(c, 2).dims, [m, n]);
  return { transA, transB, m, n, k, alpha: c.attrs.float('alpha', 1), beta: c.attrs.float('beta', 1) };
}

const gemmImpl: OpImpl = {
  infer: (c) => [{ type: inp(c, 0).type, dims: [gemmSpec(c).m, gemmSpec(c).n] }],
  evaluate: (c, x) => {
    const s = gemmSpec(c);
    const C = x[2] ? broadcastTo(x[2], [s.m, s.n]) : new Float64Array(s.m * s.n);
    const A = x[0]!.data;
    const B = x[1]!.data;
    const out = new Float64Array(s.m * s.n);
    for (let i = 0; i < s.m; i++)
      for (let j = 0; j < s.n; j++) {
        let acc = 0;
        for (let q = 0; q < s.k; q++)
          acc += A[s.transA ? q * s.m + i : i * s.k + q]! * B[s.transB ? j * s.k + q : q * s.n + j]!;
        out[i * s.n + j] = s.alpha * acc + (x[2] ? s.beta * C[i * s.n + j]! : 0);
      }
    return [make(x[0]!.type, [s.m, s.n], out)];
  },
  lower: (c, t) => {
    const s = gemmSpec(c);
    let cc = c.inputs[2] ? t.input(2) : undefined;
    if (!cc) {
      cc = t.scratch([], t.output(0));
      t.submit('fill', { y: cc }, { value: 0 });
    }
    t.submit(
      'onnx_gemm',
      { a: t.input(0), b: t.input(1), c: cc, y: t.output(0) },
      { alpha: s.alpha, beta: c.inputs[2] ? s.beta : 0, transA: s.transA, transB: s.transB },
    );
  },
};

const batchNormImpl: OpImpl = {
  infer: (c) => {
    const dims = inp(c, 0).dims;
    if (!bnTraining(c)) {
      if (c.node.outputs.filter((o) => o !== '').length > 1)
        throw fail(c, 'running statistics outputs need training_mode 1', 'TANDEM_ERR_BAD_DATA');
      return [{ type: inp(c, 0).type, dims }];
    }
    const stat = { type: inp(c, 3).type, dims: [dims[1]!] };
    return [{ type: inp(c, 0).type, dims }, stat, stat];
  },
  evaluate: (c, x) => {
    const eps = c.attrs.float('epsilon', 1e-5);
    const t = x[0]!;
    const ch = t.dims[1]!;
    const inner = numelOf(t.dims.slice(2));
    const training = bnTraining(c) ? bnBatchStats(t) : undefined;
    const [mean, variance] = training ?? [x[3]!.data, x[4]!.data];
    const out = t.data.map((v, i) => {
      const k = Math.floor(i / inner) % ch;
      return ((v - mean[k]!) / Math.sqrt(variance[k]! + eps)) * x[1]!.data[k]! + x[2]!.data[k]!;
    });
    if (!training) return [make(t.type, t.dims, out)];
    const m = c.attrs.float('momentum', 0.9);
    const run = (old: HostTensor, cur: Float64Array) =>
      make(
        old.type,
        [ch],
        old.data.map((v, k) => v * m + cur[k]! * (1 - m)),
      );
    return [make(t.type, t.dims, out), run(x[3]!, training[0]), run(x[4]!, training[1])];
  },
  lower: (c, t) => {
    if (bnTraining(c)) return lowerBnTraining(c, t);
    t.submit(
      'onnx_batchnorm',
      {
        x: t.input(0),
        scale: t.input(1),
        bias: t.input(2),
        mean: t.input(3),
        var: t.input(4),
        y: t.output(0),
      },
      { epsilon: c.attrs.float('epsilon', 1e-5) },
    );
  },
};

/** LayerNormalization's rows: [M, C] with C = ∏ dims[axis:]; Mean/InvStdDev have dims[:axis] + 1s. */
function layerNormSpec(c: OpCall) {
  const d = inp(c, 0).dims;
  const axis = normAxis(c, c.attrs.int('axis', -1), d.length);
  const cols = numelOf(d.slice(axis));
  const statDims = d.map((v, i) => (i < axis ? v : 1));
  const stats = c.node.outputs.slice(1).some((o) => o !== '');
  return { axis, cols, rows: numelOf(d) / (cols || 1), statDims, stats };
}

const layerNormImpl: OpImpl = {
  infer: (c) => {
    const s = layerNormSpec(c);
    if (numelOf(inp(c, 1).dims) !== s.cols)
      throw fail(c, `scale must have ${s.cols} elements (dims[axis:])`, 'TANDEM_ERR_UNSUPPORTED');
    const statType = 'float';
    return [
      { type: inp(c, 0).type, dims: inp(c, 0).dims },
      { type: statType, dims: s.statDims },
      { type: statType, dims: s.statDims },
    ];
  },
  evaluate: (c, x) => {
    const t = x[0]!;
    const { axis, statDims } = layerNormSpec(c);
    const eps = c.attrs.float('epsilon', 1e-5);
    const m = numelOf(t.dims.slice(axis));
    const scale = broadcastTo(x[1]!, t.dims.slice(axis));
    const bias = x[2] ? broadcastTo(x[2], t.dims.slice(axis)) : new Float64Array(m);
    const out = new Float64Array(t.data.length);
    const rows = t.data.length / m;
    const means = new Float64Array(rows);
    const rstds = new Float64Array(rows);
    for (let r = 0; r < rows; r++) {
      let mean = 0;
      for (let i = 0; i < m; i++) mean += t.data[r * m + i]!;
      mean /= m;
      let v = 0;
      for (let i = 0; i < m; i++) v += (t.data[r * m + i]! - mean) ** 2;
      const rstd = 1 / Math.sqrt(v / m + eps);
      means[r] = mean;
      rstds[r] = rstd;
      for (let i = 0; i < m; i++) out[r * m + i] = (t.data[r * m + i]! - mean) * rstd * scale[i]! + bias[i]!;
    }
    return [make(t.type, t.dims, out), make('float', statDims, means), make('float', statDims, rstds)];
  },
  lower: (c, t) => {
    const s = layerNormSpec(c);
    const x = t.input(0);
    let bias = c.inputs[2] ? t.input(2) : undefined;
    if (!bias) {
      bias = t.scratch(t.input(1).shape, t.input(1));
      t.submit('fill', { y: bias }, { value: 0 });
    }
    if (!s.stats) {
      t.submit(
        'onnx_layernorm',
        { x, scale: t.input(1), bias, y: t.output(0) },
        { axis: s.axis, epsilon: c.attrs.float('epsilon', 1e-5) },
      );
      return;
    }
    // Mean and InvStdDev wanted: the nn layernorm kernel (rows of [M, C], f32 statistics) on reshaped views.
    const view = (src: ReturnType<typeof t.input>, dims: number[]) => {
      const v = t.scratch(dims, src);
      t.submit('copy', { x: src, y: v });
      return v;
    };
    const y2 = t.scratch([s.rows, s.cols], x);
    const mean = t.output(1);
    const rstd = t.output(2);
    const mean2 = t.scratch([s.rows], mean);
    const rstd2 = t.scratch([s.rows], rstd);
    t.submit(
      'layernorm',
      {
        x: view(x, [s.rows, s.cols]),
        w: view(t.input(1), [s.cols]),
        b: view(bias, [s.cols]),
        y: y2,
        mean: mean2,
        rstd: rstd2,
      },
      { eps: c.attrs.float('epsilon', 1e-5) },
    );
    t.submit('copy', { x: y2, y: t.output(0) });
    t.submit('copy', { x: mean2, y: mean });
    t.submit('copy', { x: rstd2, y: rstd });
  },
};

/** Softmax's rows: opset < 13 flattens to [∏ dims < axis, ∏ dims ≥ axis]; from 13 one axis. */
function softmaxImpl(log: boolean): OpImpl {
  const layout = (c: OpCall, dims: readonly number[]) => {
    const legacy = c.opset < 13;
    const axis = normAxis(c, c.attrs.int('axis', legacy ? 1 : -1), dims.length);
    const inner = legacy ? 1 : numelOf(dims.slice(axis + 1));
    const len = legacy ? numelOf(dims.slice(axis)) : dims[axis]!;
    return { legacy, axis, inner, len, outer: numelOf(dims) / (inner * len || 1) };
  };
  return {
    infer: (c) => [{ type: inp(c, 0).type, dims: inp(c, 0).dims }],
    evaluate: (c, x) => {
      const t = x[0]!;
      const { inner, len, outer } = layout(c, t.dims);
      const out = new Float64Array(t.data.length);
      for (let o = 0; o < outer; o++)
        for (let i = 0; i < inner; i++) {
          const at = (j: number) => (o * len + j) * inner + i;
          let mx = -Infinity;
          for (let j = 0; j < len; j++) mx = Math.max(mx, t.data[at(j)]!);
          let s = 0;
          for (let j = 0; j < len; j++) s += Math.exp(t.data[at(j)]! - mx);
          for (let j = 0; j < len; j++)
            out[at(j)] = log ? t.data[at(j)]! - mx - Math.log(s) : Math.exp(t.data[at(j)]! - mx) / s;
        }
      return [make(t.type, t.dims, out)];
    },
    lower: (c, t) => {
      const x = t.input(0);
      const { legacy, axis, len, outer } = layout(c, x.shape);
      if (!legacy || axis === x.shape.length - 1) {
        t.submit('onnx_softmax', { x, y: t.output(0) }, { axis: legacy ? -1 : axis, log });
        return;
      }
      const x2 = t.scratch([outer, len], x);
      const y2 = t.scratch([outer, len], x);
      t.submit('copy', { x, y: x2 });
      t.submit('onnx_softmax', { x: x2, y: y2 }, { axis: 1, log });
      t.submit('copy', { x: y2, y: t.output(0) });
    },
  };
}

/**
 * Each Reduce op: onnx_reduce's op, optionally with an onnx_unary applied to the input before (`pre`)
 * or to the result after (`post`), and its float64 accumulation for the host.
 */
const REDUCE: Record<
  string,
  {
    op: string;
    pre?: string;
    post?: string;
    init: number;
    step: (a: number, v: number) => number;
    end: (a: number, n: number) => number;
  }
> = {
  ReduceSum: { op: 'sum', init: 0, step: (a, v) => a + v, end: (a) => a },
  ReduceMean: { op: 'mean', init: 0, step: (a, v) => a + v, end: (a, n) => a / n },
  ReduceMax: { op: 'max', init: -Infinity, step: (a, v) => (v !== v ? NaN : Math.max(a, v)), end: (a) => a },
  ReduceMin: { op: 'min', init: Infinity, step: (a, v) => (v !== v ? NaN : Math.min(a, v)), end: (a) => a },
  ReduceProd: { op: 'prod', init: 1, step: (a, v) => a * v, end: (a) => a },
  ReduceSumSquare: { op: 'sum_square', init: 0, step: (a, v) => a + v * v, end: (a) => a },
  ReduceL2: { op: 'l2', init: 0, step: (a, v) => a + v * v, end: (a) => Math.sqrt(a) },
  ReduceLogSumExp: { op: 'log_sum_exp', init: 0, step: (a, v) => a + Math.exp(v), end: (a) => Math.log(a) },
  ReduceL1: { op: 'sum', pre: 'abs', init: 0, step: (a, v) => a + Math.abs(v), end: (a) => a },
  ReduceLogSum: { op: 'sum', post: 'log', init: 0, step: (a, v) => a + v, end: (a) => Math.log(a) },
};

function reduceSpec(c: OpCall) {
  const d = inp(c, 0).dims;
  const axesFromInput = c.opset >= 18 || (c.node.opType === 'ReduceSum' && c.opset >= 13);
  const given = axesFromInput ? optHostInts(c, 1, 'axes') : c.attrs.ints('axes');
  const keep = c.attrs.int('keepdims', 1) === 1;
  const noop = c.attrs.int('noop_with_empty_axes', 0) === 1;
  const axes =
    given && given.length > 0 ? given.map((a) => normAxis(c, a, d.length)) : noop ? [] : d.map((_, i) => i);
  const dims = keep ? d.map((v, i) => (axes.includes(i) ? 1 : v)) : d.filter((_, i) => !axes.includes(i));
  return { axes, keep, dims, noop: noop && axes.length === 0 };
}

function reduceImpl(name: string): OpImpl {
  const r = REDUCE[name]!;
  return {
    hostInputs: [1],
    infer: (c) => [{ type: inp(c, 0).type, dims: reduceSpec(c).dims }],
    evaluate: (c, x) => {
      const { axes, dims } = reduceSpec(c);
      const t = x[0]!;
      const keptDims = t.dims.map((v, i) => (axes.includes(i) ? 1 : v));
      const ks = stridesOf(keptDims);
      const acc = new Float64Array(numelOf(keptDims)).fill(r.init);
      const idx = new Array<number>(t.dims.length).fill(0);
      const count = numelOf(axes.map((a) => t.dims[a]!));
      for (let e = 0; e < t.data.length; e++) {
        let o = 0;
        for (let d = 0; d < idx.length; d++) if (!axes.includes(d)) o += idx[d]! * ks[d]!;
        acc[o] = r.step(acc[o]!, t.data[e]!);
        for (let d = idx.length - 1; d >= 0; d--) {
          if (++idx[d]! < t.dims[d]!) break;
          idx[d] = 0;
        }
      }
      return [
        make(
          t.type,
          dims,
          acc.map((a) => r.end(a, count)),
        ),
      ];
    },
    lower: (c, t) => {
      const s = reduceSpec(c);
      let x = t.input(0);
      const y = t.output(0);
      if (s.noop && !r.pre && !r.post) return t.submit('copy', { x, y });
      if (r.pre) {
        const v = s.noop ? y : t.scratch(x.shape, x);
        t.submit('onnx_unary', { x, y: v }, { op: r.pre });
        x = v;
      }
      if (s.noop) {
        if (r.post) t.submit('onnx_unary', { x, y }, { op: r.post });
        return;
      }
      const sum = r.post ? t.scratch(y.shape, y) : y;
      t.submit('onnx_reduce', { x, y: sum }, { op: r.op, axes: s.axes.join(','), keepdims: s.keep });
      if (r.post) t.submit('onnx_unary', { x: sum, y }, { op: r.post });
    },
  };
}

export const MATH_OPS: Record<string, OpImpl> = {
  MatMul: matmulImpl,
  Gemm: gemmImpl,
  BatchNormalization: batchNormImpl,
  LayerNormalization: layerNormImpl,
  Softmax: softmaxImpl(false),
  LogSoftmax: softmaxImpl(true),
  ...Object.fromEntries(Object.keys(REDUCE).map((k) => [k, reduceImpl(k)])),
};
