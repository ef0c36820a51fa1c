/**
 * RNN, GRU and LSTM composed from existing kernels, one direction at a time: the input projection of
 * every time step in one onnx_matmul (X [T, B, I] × Wᵀ [1, I, G·H]) plus the biases, then per step an
 * onnx_matmul of the hidden state with Rᵀ, onnx_slice for the gates, onnx_map for the activations (clip
 * folded into the program) and onnx_binary for the cell arithmetic. Steps past a batch entry's
 * sequence_lens keep the state (onnx_compare + onnx_where) and write zeros to Y. Each step's h goes into
 * Y with onnx_concat at its time offset. No new kernel: the recurrence is a chain of small launches,
 * which is what a cell of this size costs anyway on every backend.
 */
import type { Tensor } from '../../memory/tensor.js';
import { DeviceOps as Ops } from './compose.js';
import {
  evaluateRnn,
  GATES,
  rnnOutputDims,
  rnnSpec,
  actProgram,
  type Cell,
  type RnnSpec,
} from './recurrent-spec.js';
import { fail, inp } from './util.js';
import type { LowerTarget, OpCall, OpImpl } from './types.js';

/** Direction d's slice [1, …] of a [dirs, …] weight, or the weight itself when there is one direction. */
const dirSlice = (o: Ops, w: Tensor, s: RnnSpec, d: number) => (s.dirs === 1 ? w : o.slice(w, 0, d, d + 1));

/** The initial state of direction d as [1, B, H]: a slice of initial_h / initial_c, or zeros. */
function initialState(o: Ops, t: LowerTarget, c: OpCall, i: number, s: RnnSpec, d: number): Tensor {
  const { batch: B, hidden: H } = s;
  if (!c.inputs[i]) return o.zeros([1, B, H]);
  const v = t.input(i);
  if (s.layout === 0) return o.slice(v, 0, d, d + 1);
  // [B, dirs, H]: direction d's [B, 1, H], which holds the same elements in the same order as [1, B, H].
  return o.reshape(s.dirs === 1 ? v : o.slice(v, 1, d, d + 1), [1, B, H]);
}

interface DirectionResult {
  /** [T, B, H] in time order (zeros past a batch entry's length), or undefined when Y is not wanted. */
  readonly y: Tensor | undefined;
  readonly h: Tensor;
  readonly c: Tensor | undefined;
}

function runDirection(c: OpCall, t: LowerTarget, s: RnnSpec, d: number, wantY: boolean): DirectionResult {
  const x0 = t.input(0);
  const o = new Ops(t, x0);
  const { seq: T, batch: B, hidden: H } = s;
  const G = GATES[s.cell];
  const GH = G * H;
  const X = s.layout === 0 ? x0 : o.transpose(x0, [1, 0, 2]);
  const Wt = o.transpose(dirSlice(o, t.input(1), s, d), [0, 2, 1]); // [1, I, GH]
  const Rt = o.transpose(dirSlice(o, t.input(2), s, d), [0, 2, 1]); // [1, H, GH]
  let XW = o.matmul(X, Wt, [T, B, GH]);
  let Rb: Tensor | undefined;
  if (c.inputs[3]) {
    const b = dirSlice(o, t.input(3), s, d); // [1, 2GH]
    XW = o.binary('add', XW, o.slice(b, 1, 0, GH));
    Rb = o.slice(b, 1, GH, 2 * GH);
    // RNN and LSTM add Rb to the same sums as Wb: once for all steps. GRU's h rows need it apart.
    if (s.cell !== 'GRU') XW = o.binary('add', XW, Rb);
  }
  let P: Tensor | undefined;
  if (s.cell === 'LSTM' && c.inputs[7]) P = dirSlice(o, t.input(7), s, d); // [1, 3H]: i, o, f
  const peep = P ? [0, 1, 2].map((q) => o.slice(P, 1, q * H, (q + 1) * H)) : undefined;
  const [f, g, hAct] = s.acts[d]!.map((a) => actProgram(a, s.clip));
  // GRU's candidate reads R's h rows apart from z and r (reset applied before or after that product).
  const RtZR = s.cell === 'GRU' ? o.slice(Rt, 2, 0, 2 * H) : Rt;
  const RtH = s.cell === 'GRU' ? o.slice(Rt, 2, 2 * H, GH) : undefined;
  const RbZR = Rb && s.cell === 'GRU' ? o.slice(Rb, 1, 0, 2 * H) : undefined;
  const RbH = Rb && s.cell === 'GRU' ? o.slice(Rb, 1, 2 * H, GH) : undefined;
  let h = initialState(o, t, c, 5, s, d);
  let cst = s.cell === 'LSTM' ? initialState(o, t, c, 6, s, d) : undefined;
  const Y = wantY ? o.tmp([T, B, H]) : undefined;
  let lens: Tensor | undefined;
  if (s.lens) lens = o.reshape(t.input(4), [1, B, 1], t.scratch([1, B, 1], t.input(4)));
  for (let step = 0; step < T; step++) {
    const time = s.reverse[d] ? T - 1 - step : step;
    const xw = o.slice(XW, 0, time, time + 1); // [1, B, GH]
    const hr = o.matmul(h, RtZR, [1, B, s.cell === 'GRU' ? 2 * H : GH]);
    let next: Tensor;
    let nextC: Tensor | undefined;
    if (s.cell === 'RNN') {
      next = o.map(f!, o.binary('add', xw, hr));
    } else if (s.cell === 'LSTM') {
      const gates = o.binary('add', xw, hr);
      const gate = (q: number) => o.slice(gates, 2, q * H, (q + 1) * H);
      const withPeep = (v: Tensor, q: number, state: Tensor) =>
        peep ? o.binary('add', v, o.binary('mul', state, peep[q]!)) : v;
      const i = o.map(f!, withPeep(gate(0), 0, cst!));
      const fg = o.map(f!, withPeep(gate(2), 2, cst!));
      nextC = o.binary('add', o.binary('mul', fg, cst!), o.binary('mul', i, o.map(g!, gate(3))));
      const og = o.map(f!, withPeep(gate(1), 1, nextC));
      next = o.binary('mul', og, o.map(hAct!, nextC));
    } else {
      const zrPre = o.binary('add', o.slice(xw, 2, 0, 2 * H), hr);
      const zr = o.map(f!, RbZR ? o.binary('add', zrPre, RbZR) : zrPre);
      const z = o.slice(zr, 2, 0, H);
      const r = o.slice(zr, 2, H, 2 * H);
      let hh: Tensor;
      if (s.linearBeforeReset) {
        const p = o.matmul(h, RtH!, [1, B, H]);
        hh = o.binary('mul', r, RbH ? o.binary('add', p, RbH) : p);
      } else {
        const p = o.matmul(o.binary('mul', r, h), RtH!, [1, B, H]);
        hh = RbH ? o.binary('add', p, RbH) : p;
      }
      const cand = o.map(g!, o.binary('add', o.slice(xw, 2, 2 * H, GH), hh));
      // (1 − z)·cand + z·h = cand + z·(h − cand)
      next = o.binary('add', cand, o.binary('mul', z, o.binary('sub', h, cand)));
    }
    let out = next;
    if (lens) {
      // Entries whose sequence has ended keep their state and write zeros to Y.
      const live = t.scratch([1, B, 1], { dtype: 'u8' });
      const stepNo = t.scratch([], lens);
      t.submit('fill', { y: stepNo }, { value: step });
      t.submit('onnx_compare', { a: stepNo, b: lens, c: live }, { op: 'less' });
      const keep = (v: Tensor, old: Tensor) => {
        const z = o.tmp(old.shape);
        t.submit('onnx_where', { cond: live, x: v, y: old, z });
        return z;
      };
      out = keep(next, o.zeros([1, B, H]));
      next = keep(next, h);
      if (nextC) nextC = keep(nextC, cst!);
    }
    if (Y) o.concat(out, Y, 0, time);
    h = next;
    cst = nextC;
  }
  return { y: Y, h, c: cst };
}

function lowerRnn(c: OpCall, t: LowerTarget, s: RnnSpec): void {
  if (s.lens && s.reverse.some((r) => r))
    throw fail(
      c,
      `sequence_lens of unequal lengths with a reverse direction (op ${c.node.opType}, domain ai.onnx, opset ${c.opset}, attribute direction) is not supported`,
      'TANDEM_ERR_UNSUPPORTED',
    );
  const o = new Ops(t, t.input(0));
  const wanted = (i: number) => (c.node.outputs[i] ?? '') !== '';
  const dims = rnnOutputDims(s);
  const { seq: T, batch: B, hidden: H, dirs } = s;
  // Results gathered in layout 0 ([T, dirs·B, H] is Y's [T, dirs, B, H]), written to the outputs after.
  const Yall = wanted(0) ? o.tmp([T, dirs * B, H]) : undefined;
  const states = [wanted(1) ? o.tmp([dirs, B, H]) : undefined, wanted(2) ? o.tmp([dirs, B, H]) : undefined];
  for (let d = 0; d < dirs; d++) {
    const r = runDirection(c, t, s, d, Yall !== undefined);
    if (Yall) o.concat(r.y!, Yall, 1, d * B);
    if (states[0]) o.concat(r.h, states[0], 0, d);
    if (states[1] && r.c) o.concat(r.c, states[1], 0, d);
  }
  if (Yall) {
    if (s.layout === 0) o.reshape(Yall, dims[0]!, t.output(0));
    else o.transpose(o.reshape(Yall, [T, dirs, B, H]), [2, 0, 1, 3], t.output(0));
  }
  states.forEach((v, k) => {
    if (!v) return;
    if (s.layout === 0) o.reshape(v, dims[k + 1]!, t.output(k + 1));
    else o.transpose(v, [1, 0, 2], t.output(k + 1));
  });
}

function rnnImpl(cell: Cell): OpImpl {
  return {
    infer: (c) => {
      const s = rnnSpec(c, cell);
      return rnnOutputDims(s).map((dims) => ({ type: inp(c, 0).type, dims }));
    },
    evaluate: (c, x) => evaluateRnn(c, rnnSpec(c, cell), x),
    hostInputs: [4],
    lower: (c, t) => lowerRnn(c, t, rnnSpec(c, cell)),
  };
}

export const RECURRENT_OPS: Record<string, OpImpl> = {
  RNN: rnnImpl('RNN'),
  GRU: rnnImpl('GRU'),
  LSTM: rnnImpl('LSTM'),
};
