/**
 * RNN, GRU and LSTM: the attributes read once (direction, layout, activations with their alpha/beta,
 * clip, GRU's linear_before_reset, host-known sequence_lens), the activations as onnx_map programs for
 * the device, and the float64 evaluation written from the ONNX definitions (the reference the device
 * composition in recurrent.ts is checked against).
 */
import { numelOf, roundTo, type HostTensor } from '../host-tensor.js';
import { fail, inp, make } from './util.js';
import type { OpCall } from './types.js';

export type Cell = 'RNN' | 'GRU' | 'LSTM';

/** Gates per cell, in ONNX's weight order: RNN i; GRU z r h; LSTM i o f c. */
export const GATES: Readonly<Record<Cell, number>> = { RNN: 1, GRU: 3, LSTM: 4 };
const DEFAULT_ACTS: Readonly<Record<Cell, readonly string[]>> = {
  RNN: ['Tanh'],
  GRU: ['Sigmoid', 'Tanh'],
  LSTM: ['Sigmoid', 'Tanh', 'Tanh'],
};

/** ONNX's activation names (compared lower-case, as ONNX Runtime does), with their default alpha/beta. */
const ACTS: Readonly<Record<string, { alpha?: number; beta?: number }>> = {
  relu: {},
  tanh: {},
  sigmoid: {},
  softsign: {},
  softplus: {},
  affine: { alpha: 1, beta: 0 },
  leakyrelu: { alpha: 0.01 },
  thresholdedrelu: { alpha: 1 },
  scaledtanh: { alpha: 1, beta: 1 },
  hardsigmoid: { alpha: 0.2, beta: 0.5 },
  elu: { alpha: 1 },
};

export interface Activation {
  readonly name: string;
  readonly alpha: number;
  readonly beta: number;
}

export interface RnnSpec {
  readonly cell: Cell;
  readonly dirs: number;
  /** Direction d runs backwards in time (direction reverse, or the second half of bidirectional). */
  readonly reverse: readonly boolean[];
  readonly seq: number;
  readonly batch: number;
  readonly input: number;
  readonly hidden: number;
  readonly layout: 0 | 1;
  /** Per direction: the cell's activations (f; f, g; f, g, h). */
  readonly acts: readonly (readonly Activation[])[];
  readonly clip: number | undefined;
  readonly linearBeforeReset: boolean;
  /** Host-known sequence_lens, when given and not all equal to seq. */
  readonly lens: readonly number[] | undefined;
}

function unsupported(c: OpCall, attr: string, detail: string): Error {
  return fail(
    c,
    `${detail} (op ${c.node.opType}, domain ai.onnx, opset ${c.opset}, attribute ${attr}) is not supported`,
    'TANDEM_ERR_UNSUPPORTED',
  );
}

function activations(c: OpCall, cell: Cell, dirs: number): Activation[][] {
  const per = DEFAULT_ACTS[cell].length;
  const names =
    c.attrs.strings('activations') ?? Array.from({ length: dirs }, () => DEFAULT_ACTS[cell]).flat();
  if (names.length !== per * dirs)
    throw fail(
      c,
      `activations lists ${names.length} functions, ${per * dirs} expected`,
      'TANDEM_ERR_BAD_DATA',
    );
  const alphas = [...(c.attrs.floats('activation_alpha') ?? [])];
  const betas = [...(c.attrs.floats('activation_beta') ?? [])];
  const acts = names.map((n) => {
    const name = n.toLowerCase();
    const d = ACTS[name];
    if (!d) throw unsupported(c, 'activations', `activation ${n}`);
    // The lists are consumed in order by the activations that take the parameter (ONNX Runtime's rule).
    const alpha = d.alpha === undefined ? 0 : (alphas.shift() ?? d.alpha);
    const beta = d.beta === undefined ? 0 : (betas.shift() ?? d.beta);
    return { name, alpha, beta };
  });
  return Array.from({ length: dirs }, (_, d) => acts.slice(d * per, (d + 1) * per));
}

export function rnnSpec(c: OpCall, cell: Cell): RnnSpec {
  const x = inp(c, 0).dims;
  const w = inp(c, 1).dims;
  const r = inp(c, 2).dims;
  const direction = c.attrs.string('direction', 'forward');
  if (direction !== 'forward' && direction !== 'reverse' && direction !== 'bidirectional')
    throw fail(c, `direction ${direction} is not forward, reverse or bidirectional`, 'TANDEM_ERR_BAD_DATA');
  const dirs = direction === 'bidirectional' ? 2 : 1;
  const layout = c.attrs.int('layout', 0);
  if (layout !== 0 && layout !== 1) throw fail(c, `layout ${layout} is not 0 or 1`, 'TANDEM_ERR_BAD_DATA');
  if (x.length !== 3) throw fail(c, `X must be 3-d, got [${x.join(', ')}]`);
  const [seq, batch] = layout === 0 ? [x[0]!, x[1]!] : [x[1]!, x[0]!];
  const input = x[2]!;
  const hidden = c.attrs.has('hidden_size') ? c.attrs.int('hidden_size') : r[2]!;
  const gh = GATES[cell] * hidden;
  const want = (name: string, got: readonly number[], dims: number[]) => {
    if (got.length !== dims.length || got.some((v, i) => v !== dims[i]))
      throw fail(c, `${name} must be [${dims.join(', ')}], got [${got.join(', ')}]`);
  };
  want('W', w, [dirs, gh, input]);
  want('R', r, [dirs, gh, hidden]);
  if (c.inputs[3]) want('B', inp(c, 3).dims, [dirs, 2 * gh]);
  if (c.inputs[5])
    want('initial_h', inp(c, 5).dims, layout === 0 ? [dirs, batch, hidden] : [batch, dirs, hidden]);
  if (cell === 'LSTM') {
    if (c.inputs[6])
      want('initial_c', inp(c, 6).dims, layout === 0 ? [dirs, batch, hidden] : [batch, dirs, hidden]);
    if (c.inputs[7]) want('P', inp(c, 7).dims, [dirs, 3 * hidden]);
    if (c.attrs.int('input_forget', 0) !== 0) throw unsupported(c, 'input_forget', 'input_forget 1');
  }
  let lens: number[] | undefined;
  if (c.inputs[4]) {
    want('sequence_lens', inp(c, 4).dims, [batch]);
    const host = inp(c, 4).host;
    if (!host) throw unsupported(c, 'sequence_lens', 'sequence_lens computed during the run');
    lens = Array.from(host.data);
    if (lens.some((l) => !Number.isInteger(l) || l < 0 || l > seq))
      throw fail(c, `sequence_lens [${lens.join(', ')}] must lie in [0, ${seq}]`, 'TANDEM_ERR_BAD_DATA');
    if (lens.every((l) => l === seq)) lens = undefined;
  }
  const reverse = dirs === 2 ? [false, true] : [direction === 'reverse'];
  return {
    cell,
    dirs,
    reverse,
    seq,
    batch,
    input,
    hidden,
    layout,
    acts: activations(c, cell, dirs),
    clip: c.attrs.has('clip') ? c.attrs.float('clip', 0) : undefined,
    linearBeforeReset: cell === 'GRU' && c.attrs.int('linear_before_reset', 0) !== 0,
    lens,
  };
}

/** The activation as an onnx_map program: clip (when set) then the function, r0 the input. */
export function actProgram(a: Activation, clip: number | undefined): string {
  const ins: string[] = [];
  const emit = (s: string) => ins.push(s) && `r${ins.length}`;
  const x = clip === undefined ? 'r0' : emit(`clip(r0, ${-clip}, ${clip})`);
  switch (a.name) {
    case 'relu':
    case 'tanh':
    case 'sigmoid':
    case 'softplus':
      emit(`${a.name}(${x})`);
      break;
    case 'softsign':
      emit(`div(${x}, ${emit(`add(${emit(`abs(${x})`)}, 1)`)})`);
      break;
    case 'affine':
      emit(`add(${emit(`mul(${x}, ${a.alpha})`)}, ${a.beta})`);
      break;
    case 'scaledtanh':
      emit(`mul(${emit(`tanh(${emit(`mul(${x}, ${a.beta})`)})`)}, ${a.alpha})`);
      break;
    case 'leakyrelu':
      emit(`leaky_relu(${x}, ${a.alpha})`);
      break;
    case 'thresholdedrelu':
      emit(`thresholded_relu(${x}, ${a.alpha})`);
      break;
    case 'hardsigmoid':
      emit(`hard_sigmoid(${x}, ${a.alpha}, ${a.beta})`);
      break;
    case 'elu':
      emit(`elu(${x}, ${a.alpha})`);
      break;
  }
  return ins.join('; ');
}

/** The activation in float64, clip applied first. */
export function actFn(a: Activation, clip: number | undefined): (v: number) => number {
  const f = ((): ((v: number) => number) => {
    switch (a.name) {
      case 'relu':
        return (v) => (v < 0 ? 0 : v);
      case 'tanh':
        return Math.tanh;
      case 'sigmoid':
        return (v) => 1 / (1 + Math.exp(-v));
      case 'softplus':
        return (v) => Math.log1p(Math.exp(v));
      case 'softsign':
        return (v) => v / (1 + Math.abs(v));
      case 'affine':
        return (v) => a.alpha * v + a.beta;
      case 'scaledtanh':
        return (v) => a.alpha * Math.tanh(a.beta * v);
      case 'leakyrelu':
        return (v) => (v >= 0 ? v : a.alpha * v);
      case 'thresholdedrelu':
        return (v) => (v > a.alpha ? v : 0);
      case 'hardsigmoid':
        return (v) => Math.max(0, Math.min(1, a.alpha * v + a.beta));
      default:
        return (v) => (v >= 0 ? v : a.alpha * Math.expm1(v));
    }
  })();
  return clip === undefined ? f : (v) => f(Math.min(Math.max(v, -clip), clip));
}

/** Y, Y_h (and LSTM's Y_c) in float64, batch entry by batch entry, from the ONNX definitions. */
export function evaluateRnn(c: OpCall, s: RnnSpec, x: ReadonlyArray<HostTensor | undefined>): HostTensor[] {
  const { seq: T, batch: B, input: I, hidden: H, dirs } = s;
  const G = GATES[s.cell];
  const type = x[0]!.type;
  // Element (t, b, i) of X, and (d, b, k) of the initial states, whatever the layout.
  const X = (t: number, b: number, i: number) =>
    x[0]!.data[(s.layout === 0 ? t * B + b : b * T + t) * I + i]!;
  const state = (v: HostTensor | undefined, d: number, b: number, k: number) =>
    v ? v.data[(s.layout === 0 ? d * B + b : b * dirs + d) * H + k]! : 0;
  const W = x[1]!.data;
  const R = x[2]!.data;
  const bias = (d: number, j: number) => (x[3] ? x[3].data[d * 2 * G * H + j]! : 0);
  const peep = (d: number, j: number) => (x[7] && s.cell === 'LSTM' ? x[7].data[d * 3 * H + j]! : 0);
  const Y = new Float64Array(T * dirs * B * H);
  const Yh = new Float64Array(dirs * B * H);
  const Yc = new Float64Array(dirs * B * H);
  for (let d = 0; d < dirs; d++) {
    const fs = s.acts[d]!.map((a) => actFn(a, s.clip));
    for (let b = 0; b < B; b++) {
      const len = s.lens?.[b] ?? T;
      let h = Float64Array.from({ length: H }, (_, k) => state(x[5], d, b, k));
      let cst = Float64Array.from({ length: H }, (_, k) => state(x[6], d, b, k));
      for (let step = 0; step < len; step++) {
        const t = s.reverse[d] ? len - 1 - step : step;
        // xw[j] = x·W[j] + Wb[j]; hr[j] = h·R[j] + Rb[j] for every gate row j.
        const xw = new Float64Array(G * H);
        const hr = new Float64Array(G * H);
        for (let j = 0; j < G * H; j++) {
          let a = bias(d, j);
          for (let i = 0; i < I; i++) a += X(t, b, i) * W[(d * G * H + j) * I + i]!;
          let r = bias(d, G * H + j);
          for (let k = 0; k < H; k++) r += h[k]! * R[(d * G * H + j) * H + k]!;
          xw[j] = a;
          hr[j] = r;
        }
        const next = new Float64Array(H);
        if (s.cell === 'RNN') for (let k = 0; k < H; k++) next[k] = fs[0]!(xw[k]! + hr[k]!);
        else if (s.cell === 'LSTM') {
          const nc = new Float64Array(H);
          for (let k = 0; k < H; k++) {
            const g = (q: number) => xw[q * H + k]! + hr[q * H + k]!;
            const i = fs[0]!(g(0) + peep(d, k) * cst[k]!);
            const f = fs[0]!(g(2) + peep(d, 2 * H + k) * cst[k]!);
            nc[k] = f * cst[k]! + i * fs[1]!(g(3));
            const o = fs[0]!(g(1) + peep(d, H + k) * nc[k]!);
            next[k] = o * fs[2]!(nc[k]!);
          }
          cst = nc;
        } else {
          for (let k = 0; k < H; k++) {
            const z = fs[0]!(xw[k]! + hr[k]!);
            const r = fs[0]!(xw[H + k]! + hr[H + k]!);
            let hh: number;
            if (s.linearBeforeReset) hh = r * hr[2 * H + k]!;
            else {
              hh = bias(d, G * H + 2 * H + k);
              for (let q = 0; q < H; q++) {
                const rq = fs[0]!(xw[H + q]! + hr[H + q]!);
                hh += rq * h[q]! * R[(d * G * H + 2 * H + k) * H + q]!;
              }
            }
            const cand = fs[1]!(xw[2 * H + k]! + hh);
            next[k] = (1 - z) * cand + z * h[k]!;
          }
        }
        h = next;
        for (let k = 0; k < H; k++) Y[((t * dirs + d) * B + b) * H + k] = h[k]!;
      }
      for (let k = 0; k < H; k++) {
        Yh[(d * B + b) * H + k] = h[k]!;
        Yc[(d * B + b) * H + k] = cst[k]!;
      }
    }
  }
  const r = (v: Float64Array) => Array.from(v, (e) => roundTo(type, e));
  const dims = rnnOutputDims(s);
  // Layout 1 moves the batch axis first: Y [B, T, dirs, H], Y_h / Y_c [B, dirs, H].
  const yOut = s.layout === 0 ? Y : permute(Y, [T, dirs, B, H], [2, 0, 1, 3]);
  const hOut = (v: Float64Array) => (s.layout === 0 ? v : permute(v, [dirs, B, H], [1, 0, 2]));
  const outs = [make(type, dims[0]!, r(yOut)), make(type, dims[1]!, r(hOut(Yh)))];
  if (s.cell === 'LSTM') outs.push(make(type, dims[2]!, r(hOut(Yc))));
  return outs;
}

export function rnnOutputDims(s: RnnSpec): number[][] {
  const { seq: T, batch: B, hidden: H, dirs } = s;
  const y = s.layout === 0 ? [T, dirs, B, H] : [B, T, dirs, H];
  const h = s.layout === 0 ? [dirs, B, H] : [B, dirs, H];
  return s.cell === 'LSTM' ? [y, h, h] : [y, h];
}

function permute(v: Float64Array, dims: readonly number[], perm: readonly number[]): Float64Array {
  const out = new Float64Array(v.length);
  const od = perm.map((p) => dims[p]!);
  const strides = dims.map((_, i) => numelOf(dims.slice(i + 1)));
  const idx = new Array<number>(od.length).fill(0);
  for (let e = 0; e < out.length; e++) {
    let src = 0;
    for (let i = 0; i < od.length; i++) src += idx[i]! * strides[perm[i]!]!;
    out[e] = v[src]!;
    for (let i = od.length - 1; i >= 0 && ++idx[i]! === od[i]; i--) idx[i] = 0;
  }
  return out;
}
