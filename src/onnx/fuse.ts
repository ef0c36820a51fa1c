/**
 * Plan-time fusions of device steps (after shape inference and folding):
 * - inference BatchNormalizations and per-channel constant Add/Mul after a Conv/ConvTranspose with
 *   constant weights are folded into new constant weights and bias (w·s, b·s + t for y·s + t, with
 *   BatchNorm's s = scale/√(var + ε), t = bias − mean·s);
 * - a chain of element-wise nodes on one feature map and scalar constants (activations, Add/Sub/Mul/
 *   Div/Pow/Max/Min, Clip with constant bounds) becomes one program (src/kernels/onnx/map-program.ts):
 *   applied by the Conv/ConvTranspose that produces the map before its store, or by one onnx_map.
 *   Only values read by nothing outside the chain (and no graph output) disappear, so the graph's
 *   results are unchanged: PaddleOCR's det network goes from 326 steps to about 70.
 * TANDEM_ONNX_FUSE=0 turns both off (for comparison).
 */
import { hostTensor, isFloatType, numelOf, type HostTensor } from './host-tensor.js';
import type { OnnxNode } from './model.js';
import { activationOf, BINARY_KERNEL_OPS } from './ops/elementwise.js';
import type { OpCall, OpImpl } from './ops/types.js';
import type { DeviceStep, PlannedValue } from './plan-types.js';
import { CONV_EPILOGUE_CONSTANTS } from '../kernels/onnx/conv.js';
import {
  MAX_MAP_CONSTANTS,
  MAX_MAP_INSTRS,
  type MapInstr,
  type MapOperand,
  formatMapProgram,
  mapConstants,
} from '../kernels/onnx/map-program.js';

/** The binary ops a chain takes: the two-operand ones (not n-ary Sum/Mean), each one instruction. */
const BINARY_OPS: Readonly<Record<string, MapInstr['op']>> = BINARY_KERNEL_OPS;
/** Parameters of the unary ops, as map-program.ts orders them (activationOf's scalar names). */
const UNARY_PARAM_NAMES: Readonly<Record<string, readonly [string, number][]>> = {
  leaky_relu: [['alpha', 0.01]],
  hard_sigmoid: [
    ['alpha', 0.2],
    ['beta', 0.5],
  ],
  clip: [
    ['min', -Infinity],
    ['max', Infinity],
  ],
  elu: [['alpha', 1]],
  thresholded_relu: [['alpha', 1]],
  shrink: [
    ['alpha', 0.5],
    ['beta', 0],
  ],
};

export function fusionEnabled(): boolean {
  return process.env.TANDEM_ONNX_FUSE !== '0';
}

/** Readers of each value: the indices of the steps that read it (once per step). */
function readersOf(steps: readonly (DeviceStep | null)[]): Map<string, number[]> {
  const readers = new Map<string, number[]>();
  steps.forEach((s, k) => {
    if (!s) return;
    for (const n of new Set(s.node.inputs)) {
      if (n === '') continue;
      const list = readers.get(n) ?? [];
      list.push(k);
      readers.set(n, list);
    }
  });
  return readers;
}

/** A constant float value known on the host, for BatchNorm folding. */
function hostFloats(values: ReadonlyMap<string, PlannedValue>, name: string | undefined) {
  if (!name) return undefined;
  const v = values.get(name);
  return v?.host && v.constant && isFloatType(v.type) ? v : undefined;
}

/**
 * The per-channel affine map y·scale[c] + shift[c] a step applies to `y` (channel axis 1 of a rank-r
 * output with `o` channels): an inference BatchNormalization with constant parameters, or Add/Mul of a
 * constant that is one number or one per channel. Undefined for anything else.
 */
function affineOf(
  r: DeviceStep,
  y: string,
  o: number,
  rank: number,
  values: ReadonlyMap<string, PlannedValue>,
): { scale: number[]; shift: number[] } | undefined {
  const ones = (v: number) => new Array<number>(o).fill(v);
  if (r.node.opType === 'BatchNormalization') {
    if (r.node.inputs[0] !== y || r.node.outputs.slice(1).some((n) => n !== '')) return undefined;
    // Training mode normalizes with the batch's statistics, not the constant ones.
    if (r.call.attrs.int('training_mode', 0) === 1) return undefined;
    const [sc, bi, mean, variance] = [1, 2, 3, 4].map((i) => hostFloats(values, r.node.inputs[i]));
    if (!sc || !bi || !mean || !variance || numelOf(sc.dims) !== o) return undefined;
    const eps = r.call.attrs.float('epsilon', 1e-5);
    const scale = ones(0).map((_, c) => sc.host!.data[c]! / Math.sqrt(variance.host!.data[c]! + eps));
    return { scale, shift: scale.map((f, c) => bi.host!.data[c]! - mean.host!.data[c]! * f) };
  }
  if ((r.node.opType !== 'Add' && r.node.opType !== 'Mul') || r.node.inputs.length !== 2) return undefined;
  const other = r.node.inputs[0] === y ? r.node.inputs[1] : r.node.inputs[0];
  if (other === y || !r.node.inputs.includes(y)) return undefined;
  const k = hostFloats(values, other);
  if (!k) return undefined;
  const d = k.dims;
  const n = numelOf(d);
  const perChannel = d.length <= rank && d.every((v, i) => rank - d.length + i === 1 || v === 1);
  if (!perChannel || (n !== 1 && n !== o)) return undefined;
  const at = (c: number) => k.host!.data[n === 1 ? 0 : c]!;
  return r.node.opType === 'Add'
    ? { scale: ones(1), shift: ones(0).map((_, c) => at(c)) }
    : { scale: ones(0).map((_, c) => at(c)), shift: ones(0) };
}

/** Folded weights and bias by folded weight name, per original weight tensor (foldAffine). */
const foldCache = new WeakMap<HostTensor, Map<string, readonly [HostTensor, HostTensor]>>();

/**
 * Conv/ConvTranspose with constant weights followed by per-channel affine steps (affineOf), each the
 * only reader of the value before it: one conv with new constant weights `<w>@fold:<y>` and bias
 * `<y>@fold-bias`, y the last folded output (w·scale, b·scale + shift, rounded to float32 once).
 */
function foldAffine(
  steps: (DeviceStep | null)[],
  values: Map<string, PlannedValue>,
  outputs: ReadonlySet<string>,
): void {
  const readers = readersOf(steps);
  steps.forEach((s, k) => {
    if (!s || (s.node.opType !== 'Conv' && s.node.opType !== 'ConvTranspose') || s.call.activation) return;
    const w = hostFloats(values, s.node.inputs[1]);
    const b = s.node.inputs[2] ? hostFloats(values, s.node.inputs[2]) : undefined;
    if (!w || (s.node.inputs[2] && !b)) return;
    const rank = s.outputs[0]!.dims.length;
    const o = s.outputs[0]!.dims[1]!;
    let scale = new Array<number>(o).fill(1);
    let shift = Array.from({ length: o }, (_, c) => (b ? b.host!.data[c]! : 0));
    let y = s.node.outputs[0]!;
    const folded: number[] = [];
    for (;;) {
      const rs = readers.get(y);
      if (!rs || rs.length !== 1 || outputs.has(y) || !steps[rs[0]!]) break;
      const r = steps[rs[0]!]!;
      const f = affineOf(r, y, o, rank, values);
      if (!f) break;
      scale = scale.map((v, c) => v * f.scale[c]!);
      shift = shift.map((v, c) => v * f.scale[c]! + f.shift[c]!);
      folded.push(rs[0]!);
      y = r.node.outputs[0]!;
    }
    if (folded.length === 0) return;
    // Output channel of each weight: Conv's w is [O, C/g, …]; ConvTranspose's [C, O/g, …] with groups.
    const wd = w.dims;
    const inner = numelOf(wd.slice(2));
    const group = s.call.attrs.int('group', 1);
    const channelOf = (i: number): number => {
      if (s.node.opType === 'Conv') return Math.floor(i / (wd[1]! * inner));
      const c = Math.floor(i / (wd[1]! * inner));
      const oo = Math.floor(i / inner) % wd[1]!;
      return Math.floor(c / (wd[0]! / group)) * wd[1]! + oo;
    };
    const last = steps[folded[folded.length - 1]!]!;
    // Named after the folded output value (unique in the graph; node names may be empty).
    const wName = `${s.node.inputs[1]}@fold:${y}`;
    const bName = `${y}@fold-bias`;
    // The folded constants depend only on the model (its weights and the folded chain, which the names
    // identify), not on the input shapes: computed once per model, not once per plan (a served model
    // gets a plan per batch size, and folding every conv's weights took ~100 ms a plan).
    const perWeight = foldCache.get(w.host!) ?? new Map<string, readonly [HostTensor, HostTensor]>();
    foldCache.set(w.host!, perWeight);
    let hosts = perWeight.get(wName);
    if (!hosts) {
      const w2 = Float64Array.from(w.host!.data, (v, i) => Math.fround(v * scale[channelOf(i)]!));
      const b2 = Float64Array.from(shift, (v) => Math.fround(v));
      hosts = [hostTensor(w.type, wd, w2), hostTensor(w.type, [o], b2)];
      perWeight.set(wName, hosts);
    }
    values.set(wName, { type: w.type, dims: wd, host: hosts[0], constant: true });
    values.set(bName, { type: w.type, dims: [o], host: hosts[1], constant: true });
    const node: OnnxNode = {
      ...s.node,
      name: [s.node.name, ...folded.map((j) => steps[j]!.node.name)].join('+'),
      inputs: [s.node.inputs[0]!, wName, bName],
      outputs: [y],
    };
    const call: OpCall = {
      ...s.call,
      node,
      inputs: [s.call.inputs[0], values.get(wName), values.get(bName)],
    };
    steps[k] = { ...s, node, call, outputs: last.outputs };
    for (const j of folded) steps[j] = null;
  });
}

/** A step as a program instruction over the chain's registers, or undefined when it cannot join. */
function instrOf(
  s: DeviceStep,
  regs: ReadonlyMap<string, number>,
  dims: readonly number[],
): { instr: MapInstr; main: string } | undefined {
  const out = s.outputs[0];
  if (s.node.outputs.length !== 1 || !out || !isFloatType(out.type)) return undefined;
  if (out.dims.length !== dims.length || out.dims.some((d, i) => d !== dims[i])) return undefined;
  const operand = (name: string | undefined): MapOperand | undefined => {
    if (name === undefined || name === '') return undefined;
    const r = regs.get(name);
    if (r !== undefined) return { reg: r };
    const v = s.call.inputs[s.node.inputs.indexOf(name)];
    return v?.host && numelOf(v.dims) === 1 && isFloatType(v.type) ? { value: v.host.data[0]! } : undefined;
  };
  const binary = BINARY_OPS[s.node.opType];
  if (binary && s.node.inputs.length === 2) {
    const [a, b] = [operand(s.node.inputs[0]), operand(s.node.inputs[1])];
    if (!a || !b || (!('reg' in a) && !('reg' in b))) return undefined;
    const main = 'reg' in a ? s.node.inputs[0]! : s.node.inputs[1]!;
    return { instr: { op: binary, args: [a, b], params: [] }, main };
  }
  const act = activationOf(s.call);
  const x = s.node.inputs[0];
  if (!act || x === undefined || !regs.has(x)) return undefined;
  const op = act['op'] as MapInstr['op'];
  const params = (UNARY_PARAM_NAMES[op] ?? []).map(([n, dflt]) => {
    const v = act[n];
    return typeof v === 'number' ? v : dflt;
  });
  return { instr: { op, args: [{ reg: regs.get(x)! }], params }, main: x };
}

/** The onnx_map step a standalone chain becomes. */
function mapImpl(program: string): OpImpl {
  return {
    infer: () => [],
    evaluate: () => [],
    lower: (_c, t) => t.submit('onnx_map', { x: t.input(0), y: t.output(0) }, { program }),
  };
}

interface Chain {
  readonly members: number[];
  readonly instrs: MapInstr[];
}

/**
 * Grows a chain from the step at `head` (a conv: r0 is its output; an element-wise step: r0 is its
 * main input and the step the first instruction), then keeps its longest prefix after which every
 * register but the last is read inside the chain only.
 */
function growChain(
  steps: readonly (DeviceStep | null)[],
  head: number,
  readers: ReadonlyMap<string, number[]>,
  outputs: ReadonlySet<string>,
  maxConstants: number,
): Chain | undefined {
  const s = steps[head]!;
  const regs = new Map<string, number>();
  const members = [head];
  const instrs: MapInstr[] = [];
  const produced: string[] = [];
  const dims = s.outputs[0]!.dims;
  if (s.node.opType === 'Conv' || s.node.opType === 'ConvTranspose') {
    regs.set(s.node.outputs[0]!, 0);
    produced.push(s.node.outputs[0]!);
  } else {
    // Register r0 is the main input; its other readers do not matter.
    const main = s.node.inputs.find((n) => n !== '' && !s.call.inputs[s.node.inputs.indexOf(n)]?.host);
    if (main === undefined) return undefined;
    const v = s.call.inputs[s.node.inputs.indexOf(main)]!;
    if (numelOf(v.dims) !== numelOf(dims) || v.dims.length !== dims.length) return undefined;
    regs.set(main, 0);
    const own = instrOf(s, regs, dims);
    if (!own) return undefined;
    instrs.push(own.instr);
    regs.set(s.node.outputs[0]!, 1);
    produced.push(s.node.outputs[0]!);
  }
  let best: Chain | undefined;
  const closed = (): boolean =>
    produced.every(
      (v, i) =>
        i === produced.length - 1 ||
        (!outputs.has(v) && (readers.get(v) ?? []).every((r) => members.includes(r))),
    );
  if (instrs.length > 0 && closed()) best = { members: [...members], instrs: [...instrs] };
  for (let j = head + 1; j < steps.length && instrs.length < MAX_MAP_INSTRS; j++) {
    const r = steps[j];
    if (!r || !r.node.inputs.some((n) => regs.has(n))) continue;
    const got = instrOf(r, regs, dims);
    if (!got) break;
    const next = [...instrs, got.instr];
    if (mapConstants({ instrs: next }).length > maxConstants) break;
    instrs.push(got.instr);
    members.push(j);
    regs.set(r.node.outputs[0]!, instrs.length);
    produced.push(r.node.outputs[0]!);
    if (closed()) best = { members: [...members], instrs: [...instrs] };
    // Nothing read later: no further step can join.
    if (produced.every((v) => (readers.get(v) ?? []).every((k) => k <= j))) break;
  }
  return best;
}

/**
 * A Conv/ConvTranspose without a bias gets a constant zero bias `<output>@zero-bias` (uploaded once
 * with the weights) instead of a zero-filled scratch tensor on every run.
 */
function constantZeroBias(steps: (DeviceStep | null)[], values: Map<string, PlannedValue>): void {
  steps.forEach((s, k) => {
    if (!s || (s.node.opType !== 'Conv' && s.node.opType !== 'ConvTranspose')) return;
    if (s.node.inputs[2] !== undefined && s.node.inputs[2] !== '') return;
    const w = s.call.inputs[1];
    const out = s.outputs[0];
    if (!w || !out || out.dims.length < 2) return;
    const o = out.dims[1]!;
    // Value names are unique in the graph (node names may be empty).
    const name = `${s.node.outputs[0]!}@zero-bias`;
    values.set(name, {
      type: w.type,
      dims: [o],
      host: hostTensor(w.type, [o], new Float64Array(o)),
      constant: true,
    });
    const node: OnnxNode = { ...s.node, inputs: [s.node.inputs[0]!, s.node.inputs[1]!, name] };
    steps[k] = { ...s, node, call: { ...s.call, node, inputs: [s.call.inputs[0], w, values.get(name)] } };
  });
}

export function fuseSteps(
  input: readonly DeviceStep[],
  values: Map<string, PlannedValue>,
  graphOutputs: ReadonlySet<string>,
): DeviceStep[] {
  const steps: (DeviceStep | null)[] = [...input];
  foldAffine(steps, values, graphOutputs);
  constantZeroBias(steps, values);
  const readers = readersOf(steps);
  for (let k = 0; k < steps.length; k++) {
    const s = steps[k];
    if (!s || s.call.activation || s.call.epilogue !== undefined) continue;
    const conv = s.node.opType === 'Conv' || s.node.opType === 'ConvTranspose';
    const chain = growChain(
      steps,
      k,
      readers,
      graphOutputs,
      conv ? CONV_EPILOGUE_CONSTANTS : MAX_MAP_CONSTANTS,
    );
    // A lone element-wise step stays what it is (its own kernel is as fast).
    if (!chain || (!conv && chain.instrs.length < 2)) continue;
    const last = steps[chain.members[chain.members.length - 1]!]!;
    const program = formatMapProgram({ instrs: chain.instrs });
    const names = chain.members.map((m) => steps[m]!.node.name).join('+');
    for (const m of chain.members.slice(1)) steps[m] = null;
    if (conv) {
      const node = { ...s.node, name: names, outputs: [last.node.outputs[0]!] };
      steps[k] = { ...s, node, call: { ...s.call, node, epilogue: program }, outputs: last.outputs };
    } else {
      const main = [...s.node.inputs].find(
        (n) => n !== '' && !s.call.inputs[s.node.inputs.indexOf(n)]?.host,
      )!;
      const node: OnnxNode = {
        ...s.node,
        opType: 'ElementwiseChain',
        name: names,
        inputs: [main],
        outputs: [last.node.outputs[0]!],
      };
      steps[k] = {
        node,
        impl: mapImpl(program),
        call: { ...s.call, node, inputs: [s.call.inputs[s.node.inputs.indexOf(main)]], epilogue: program },
        outputs: last.outputs,
      };
    }
  }
  return steps.filter((s): s is DeviceStep => s !== null);
}
