/**
 * Sequence and optional ops. A sequence is a list of tensor values: building, inserting, erasing and
 * picking share the tensors (one more holder each, no copy); SplitToSequence and ConcatFromSequence
 * slice and concatenate with the standard ops' kernels. Positions are read on the host.
 */
import { TandemError } from '../../core/errors.js';
import { Attrs } from '../attributes.js';
import { ELEM_TYPES, type ElemType } from '../host-tensor.js';
import type { OnnxNode } from '../model.js';
import { scalarOf, scalarVal, tensorIn } from './control-ops.js';
import type { ControlHost, ControlOp } from './host.js';
import { hostVal, type OptVal, type RunValue, type SeqVal, type TensorVal } from './values.js';
import { hostTensor } from '../host-tensor.js';

function seqIn(node: OnnxNode, v: RunValue | undefined): SeqVal {
  if (v?.kind === 'sequence') return v;
  throw new TandemError(
    'TANDEM_ERR_BAD_DATA',
    `onnx: ${node.opType} node '${node.name}': input 0 must be a sequence${v ? `, got a ${v.kind}` : ''}`,
    { reason: 'node', node: node.name, op: node.opType },
  );
}

/** A position in a sequence of `n` (negative from the end); `end` allows n itself (insert at the back). */
async function positionOf(
  node: OnnxNode,
  v: RunValue | undefined,
  n: number,
  dflt: number,
  end: boolean,
  host: ControlHost,
): Promise<number> {
  if (!v) return dflt;
  const p = await scalarOf(node, tensorIn(node, v, 'the position'), 'the position', host);
  const q = p < 0 ? p + n : p;
  if (q < 0 || q > (end ? n : n - 1))
    throw new TandemError(
      'TANDEM_ERR_BAD_DATA',
      `onnx: ${node.opType} node '${node.name}': position ${p} is outside a sequence of ${n}`,
      { reason: 'position', node: node.name, op: node.opType, position: p, length: n },
    );
  return q;
}

function retainAll(host: ControlHost, items: readonly TensorVal[]): TensorVal[] {
  return items.map((t) => host.retain(t));
}

function checkType(node: OnnxNode, s: SeqVal, t: TensorVal): void {
  if (s.items.length > 0 && t.type !== s.elemType)
    throw new TandemError(
      'TANDEM_ERR_DTYPE',
      `onnx: ${node.opType} node '${node.name}': a ${t.type} tensor cannot join a sequence of ${s.elemType}`,
      { node: node.name, want: s.elemType, got: t.type },
    );
}

const sequenceEmpty: ControlOp = (node) => {
  const code = new Attrs(node.opType, node.attrs).int('dtype', 1);
  const elemType = (ELEM_TYPES as Record<number, ElemType | undefined>)[code] ?? 'float';
  return Promise.resolve([{ kind: 'sequence', elemType, items: [] } satisfies SeqVal]);
};

const sequenceConstruct: ControlOp = (node, ins, host) => {
  const items = ins.map((v, i) => tensorIn(node, v, `input ${i}`));
  const first = items[0];
  if (!first) throw tensorIn(node, undefined, 'input 0');
  for (const t of items) checkType(node, { kind: 'sequence', elemType: first.type, items }, t);
  return Promise.resolve([
    { kind: 'sequence', elemType: first.type, items: retainAll(host, items) } satisfies SeqVal,
  ]);
};

const sequenceInsert: ControlOp = async (node, ins, host) => {
  const s = seqIn(node, ins[0]);
  const t = tensorIn(node, ins[1], 'the tensor');
  checkType(node, s, t);
  const at = await positionOf(node, ins[2], s.items.length, s.items.length, true, host);
  const items = [...s.items.slice(0, at), t, ...s.items.slice(at)];
  return [{ kind: 'sequence', elemType: t.type, items: retainAll(host, items) } satisfies SeqVal];
};

const sequenceErase: ControlOp = async (node, ins, host) => {
  const s = seqIn(node, ins[0]);
  const at = await positionOf(node, ins[1], s.items.length, s.items.length - 1, false, host);
  const items = s.items.filter((_, i) => i !== at);
  return [{ ...s, items: retainAll(host, items) }];
};

const sequenceAt: ControlOp = async (node, ins, host) => {
  const s = seqIn(node, ins[0]);
  const at = await positionOf(node, tensorIn(node, ins[1], 'the position'), s.items.length, 0, false, host);
  return [host.retain(s.items[at]!)];
};

const sequenceLength: ControlOp = (node, ins) =>
  Promise.resolve([scalarVal('int64', seqIn(node, ins[0]).items.length)]);

const splitToSequence: ControlOp = async (node, ins, host) => {
  const x = tensorIn(node, ins[0], 'the input');
  const a = new Attrs(node.opType, node.attrs);
  const r = x.dims.length;
  const axis = a.int('axis', 0) < 0 ? a.int('axis', 0) + r : a.int('axis', 0);
  const size = x.dims[axis] ?? 0;
  const split = ins[1] ? await host.readHost(tensorIn(node, ins[1], 'split')) : undefined;
  let sizes: number[];
  if (!split) sizes = new Array<number>(size).fill(1);
  else if (split.dims.length === 0) {
    const c = split.data[0]!;
    sizes = Array.from({ length: Math.ceil(size / c) }, (_, i) => Math.min(c, size - i * c));
  } else sizes = Array.from(split.data);
  if (sizes.reduce((p, q) => p + q, 0) !== size || sizes.some((q) => q < 0))
    throw new TandemError(
      'TANDEM_ERR_BAD_DATA',
      `onnx: SplitToSequence node '${node.name}': split [${sizes.join(', ')}] does not add up to ${size}`,
      { reason: 'node', node: node.name, op: node.opType },
    );
  const squeeze = !split && a.int('keepdims', 1) === 0;
  const items: TensorVal[] = [];
  const i64 = (v: number): TensorVal => hostVal(hostTensor('int64', [1], [v]), true);
  let start = 0;
  try {
    for (const q of sizes) {
      const [part] = await host.apply(node, 'Slice', {}, [x, i64(start), i64(start + q), i64(axis)]);
      start += q;
      if (!squeeze) items.push(part!);
      else {
        const [sq] = await host
          .apply(node, 'Squeeze', {}, [part!, i64(axis)])
          .finally(() => host.release(part));
        items.push(sq!);
      }
    }
  } catch (err) {
    for (const v of items) host.release(v);
    throw err;
  }
  return [{ kind: 'sequence', elemType: x.type, items } satisfies SeqVal];
};

const concatFromSequence: ControlOp = async (node, ins, host) => {
  const s = seqIn(node, ins[0]);
  const a = new Attrs(node.opType, node.attrs);
  const axis = a.int('axis');
  if (s.items.length === 0)
    throw new TandemError(
      'TANDEM_ERR_BAD_DATA',
      `onnx: ConcatFromSequence node '${node.name}': the sequence is empty`,
      { reason: 'node', node: node.name, op: node.opType },
    );
  if (a.int('new_axis', 0) === 0) return host.apply(node, 'Concat', { axis }, s.items);
  const axes = hostVal(hostTensor('int64', [1], [axis]), true);
  const lifted: TensorVal[] = [];
  try {
    for (const t of s.items) lifted.push((await host.apply(node, 'Unsqueeze', {}, [t, axes]))[0]!);
    return await host.apply(node, 'Concat', { axis }, lifted);
  } finally {
    for (const v of lifted) host.release(v);
  }
};

const optional: ControlOp = (node, ins, host) => {
  const v = ins[0];
  if (v?.kind === 'optional')
    throw new TandemError(
      'TANDEM_ERR_BAD_DATA',
      `onnx: Optional node '${node.name}': an optional of an optional`,
      {
        reason: 'node',
        node: node.name,
      },
    );
  return Promise.resolve([{ kind: 'optional', value: v ? host.retain(v) : undefined } satisfies OptVal]);
};

const optionalHasElement: ControlOp = (_node, ins) => {
  const v = ins[0];
  const has = v !== undefined && (v.kind !== 'optional' || v.value !== undefined);
  return Promise.resolve([scalarVal('bool', has ? 1 : 0)]);
};

const optionalGetElement: ControlOp = (node, ins, host) => {
  const v = ins[0];
  const inner = v?.kind === 'optional' ? v.value : v;
  if (!inner)
    throw new TandemError(
      'TANDEM_ERR_BAD_DATA',
      `onnx: OptionalGetElement node '${node.name}': the optional is empty`,
      {
        reason: 'empty-optional',
        node: node.name,
      },
    );
  return Promise.resolve([host.retain(inner)]);
};

export const SEQUENCE_OPS: Readonly<Record<string, ControlOp>> = {
  SequenceEmpty: sequenceEmpty,
  SequenceConstruct: sequenceConstruct,
  SequenceInsert: sequenceInsert,
  SequenceErase: sequenceErase,
  SequenceAt: sequenceAt,
  SequenceLength: sequenceLength,
  SplitToSequence: splitToSequence,
  ConcatFromSequence: concatFromSequence,
  Optional: optional,
  OptionalHasElement: optionalHasElement,
  OptionalGetElement: optionalGetElement,
};
