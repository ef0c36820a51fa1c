/**
 * If, Loop, Scan and SequenceMap: subgraphs run by the interpreter, their ops as runtime tasks like the
 * main graph's. Conditions and trip counts are read on the host; Scan slices its inputs with Gather and
 * stacks its outputs with Unsqueeze and Concat (the standard ops' kernels), so no op here has a kernel.
 */
import { TandemError } from '../../core/errors.js';
import { Attrs } from '../attributes.js';
import { hostTensor } from '../host-tensor.js';
import type { OnnxGraph, OnnxNode } from '../model.js';
import type { ControlHost, ControlOp } from './host.js';
import { hostVal, type RunValue, type SeqVal, type TensorVal } from './values.js';

function graphOf(node: OnnxNode, name: string): OnnxGraph {
  const g = node.graphs?.get(name);
  if (!g)
    throw new TandemError(
      'TANDEM_ERR_BAD_DATA',
      `onnx: ${node.opType} node '${node.name}' has no '${name}' subgraph`,
      {
        reason: 'attribute',
        node: node.name,
        attribute: name,
      },
    );
  return g;
}

export function tensorIn(node: OnnxNode, v: RunValue | undefined, what: string): TensorVal {
  if (v?.kind === 'tensor') return v;
  throw new TandemError(
    'TANDEM_ERR_BAD_DATA',
    `onnx: ${node.opType} node '${node.name}': ${what} must be a tensor${v ? `, got a ${v.kind}` : ' (it is missing)'}`,
    { reason: 'node', node: node.name, op: node.opType },
  );
}

/** A one-element tensor's value, read on the host. */
export async function scalarOf(
  node: OnnxNode,
  v: TensorVal,
  what: string,
  host: ControlHost,
): Promise<number> {
  const t = await host.readHost(v);
  if (t.data.length !== 1)
    throw new TandemError(
      'TANDEM_ERR_BAD_DATA',
      `onnx: ${node.opType} node '${node.name}': ${what} must have one element, got shape [${t.dims.join(', ')}]`,
      { reason: 'node', node: node.name, op: node.opType },
    );
  return t.data[0]!;
}

export const scalarVal = (type: 'int64' | 'bool', x: number): TensorVal =>
  hostVal(hostTensor(type, [], [x]), false);

/**
 * Stacks per-iteration tensors along `axis` (of the stacked rank): Unsqueeze each, one Concat. With no
 * iteration the shape comes from the body's declared output, when it gives every dim.
 */
async function stack(
  node: OnnxNode,
  parts: readonly TensorVal[],
  axis: number,
  declared: ReadonlyArray<number | string | null> | null,
  host: ControlHost,
): Promise<TensorVal> {
  if (parts.length === 0) {
    const dims = declared?.every((d) => typeof d === 'number') ? (declared as number[]) : undefined;
    if (!dims)
      throw new TandemError(
        'TANDEM_ERR_UNSUPPORTED',
        `onnx: ${node.opType} node '${node.name}' ran no iteration and its body does not declare its scan outputs' shape`,
        { op: node.opType, node: node.name },
      );
    const r = dims.length + 1;
    const a = axis < 0 ? axis + r : axis;
    const full = [...dims.slice(0, a), 0, ...dims.slice(a)];
    return hostVal(hostTensor('float', full, []), false);
  }
  const axes = hostVal(hostTensor('int64', [1], [axis]), true);
  const lifted: TensorVal[] = [];
  try {
    for (const p of parts) lifted.push((await host.apply(node, 'Unsqueeze', {}, [p, axes]))[0]!);
    if (lifted.length === 1) return lifted.pop()!;
    return (await host.apply(node, 'Concat', { axis }, lifted))[0]!;
  } finally {
    for (const v of lifted) host.release(v);
  }
}

const ifOp: ControlOp = async (node, ins, host) => {
  const cond = await scalarOf(node, tensorIn(node, ins[0], 'the condition'), 'the condition', host);
  return host.runGraph(node, graphOf(node, cond !== 0 ? 'then_branch' : 'else_branch'), []);
};

const loopOp: ControlOp = async (node, ins, host) => {
  const body = graphOf(node, 'body');
  const maxTrip = ins[0]
    ? await scalarOf(node, tensorIn(node, ins[0], 'M'), 'the trip count M', host)
    : Infinity;
  let cond = ins[1]
    ? (await scalarOf(node, tensorIn(node, ins[1], 'cond'), 'the condition', host)) !== 0
    : true;
  let carried: RunValue[] = ins.slice(2).map((v) => host.retain(v!));
  const nCarried = carried.length;
  const scans: TensorVal[][] = body.outputs.slice(1 + nCarried).map(() => []);
  try {
    let i = 0;
    for (; i < maxTrip && cond; i++) {
      if (i >= host.maxLoopIterations)
        throw new TandemError(
          'TANDEM_ERR_LIMIT',
          `onnx: Loop node '${node.name}' ran ${i} iterations without its condition turning false (the limit is RunOptions.maxLoopIterations)`,
          { op: 'Loop', node: node.name, limit: host.maxLoopIterations },
        );
      host.checkCancelled(node);
      // Lets the event loop run (cancellation, health checks) when the body is all host arithmetic.
      if (i % 256 === 255) await new Promise<void>((r) => setImmediate(r));
      const step = carried;
      carried = [];
      const outs = await host.runGraph(node, body, [
        scalarVal('int64', i),
        scalarVal('bool', cond ? 1 : 0),
        ...step,
      ]);
      try {
        cond =
          (await scalarOf(
            node,
            tensorIn(node, outs[0], 'the body condition'),
            'the body condition',
            host,
          )) !== 0;
      } catch (err) {
        for (const v of outs) host.release(v);
        throw err;
      }
      host.release(outs[0]);
      carried = outs.slice(1, 1 + nCarried);
      outs.slice(1 + nCarried).forEach((v, k) => scans[k]!.push(tensorIn(node, v, `scan output ${k}`)));
    }
    const stacked: TensorVal[] = [];
    for (const [k, parts] of scans.entries())
      stacked.push(await stack(node, parts, 0, body.outputs[1 + nCarried + k]?.dims ?? null, host));
    const result = [...carried, ...stacked];
    carried = [];
    return result;
  } finally {
    for (const v of carried) host.release(v);
    for (const s of scans) for (const v of s) host.release(v);
  }
};

const scanOp: ControlOp = async (node, ins, host) => {
  if (host.opset < 9)
    throw new TandemError('TANDEM_ERR_UNSUPPORTED', `onnx: Scan before opset 9 is not supported`, {
      op: 'Scan',
    });
  const body = graphOf(node, 'body');
  const a = new Attrs('Scan', node.attrs);
  const m = a.int('num_scan_inputs');
  const n = ins.length - m;
  const k = body.outputs.length - n;
  const inDirs = a.ints('scan_input_directions') ?? new Array<number>(m).fill(0);
  const inAxes = a.ints('scan_input_axes') ?? new Array<number>(m).fill(0);
  const outDirs = a.ints('scan_output_directions') ?? new Array<number>(k).fill(0);
  const outAxes = a.ints('scan_output_axes') ?? new Array<number>(k).fill(0);
  const xs = ins.slice(n).map((v, j) => tensorIn(node, v, `scan input ${j}`));
  const axisOf = (j: number): number => {
    const r = xs[j]!.dims.length;
    return inAxes[j]! < 0 ? inAxes[j]! + r : inAxes[j]!;
  };
  const lengths = xs.map((x, j) => x.dims[axisOf(j)]);
  const len = lengths[0] ?? 0;
  if (lengths.some((l) => l !== len))
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `onnx: Scan node '${node.name}': the scan inputs' lengths differ (${lengths.join(', ')})`,
      { op: 'Scan', node: node.name },
    );
  let state: RunValue[] = ins.slice(0, n).map((v) => host.retain(v!));
  const scans: TensorVal[][] = Array.from({ length: k }, () => []);
  try {
    for (let i = 0; i < len; i++) {
      host.checkCancelled(node);
      const slices: TensorVal[] = [];
      for (const [j, x] of xs.entries()) {
        const index = scalarVal('int64', inDirs[j] === 1 ? len - 1 - i : i);
        slices.push((await host.apply(node, 'Gather', { axis: axisOf(j) }, [x, index]))[0]!);
      }
      const step = state;
      state = [];
      const outs = await host.runGraph(node, body, [...step, ...slices]);
      state = outs.slice(0, n);
      outs.slice(n).forEach((v, q) => scans[q]!.push(tensorIn(node, v, `scan output ${q}`)));
    }
    const stacked: TensorVal[] = [];
    for (const [q, parts] of scans.entries()) {
      const ordered = outDirs[q] === 1 ? [...parts].reverse() : parts;
      stacked.push(await stack(node, ordered, outAxes[q]!, body.outputs[n + q]?.dims ?? null, host));
    }
    const result = [...state, ...stacked];
    state = [];
    return result;
  } finally {
    for (const v of state) host.release(v);
    for (const s of scans) for (const v of s) host.release(v);
  }
};

/** SequenceMap: the body once per position of the first input's sequence; tensors inputs as they are. */
const sequenceMapOp: ControlOp = async (node, ins, host) => {
  const body = graphOf(node, 'body');
  const first = ins[0];
  if (first?.kind !== 'sequence') throw tensorInError(node);
  const outs: TensorVal[][] = body.outputs.map(() => []);
  try {
    for (let i = 0; i < first.items.length; i++) {
      host.checkCancelled(node);
      const bound = ins.map((v) =>
        host.retain(v?.kind === 'sequence' ? v.items[i]! : tensorIn(node, v, 'an input')),
      );
      const got = await host.runGraph(node, body, bound);
      got.forEach((v, q) => outs[q]!.push(tensorIn(node, v, `body output ${q}`)));
    }
    return outs.map((items, q): SeqVal => ({
      kind: 'sequence',
      elemType: items[0]?.type ?? body.outputs[q]!.type,
      items,
    }));
  } catch (err) {
    for (const s of outs) for (const v of s) host.release(v);
    throw err;
  }
};

function tensorInError(node: OnnxNode): TandemError {
  return new TandemError(
    'TANDEM_ERR_BAD_DATA',
    `onnx: ${node.opType} node '${node.name}': input 0 must be a sequence`,
    {
      reason: 'node',
      node: node.name,
      op: node.opType,
    },
  );
}

export const SUBGRAPH_OPS: Readonly<Record<string, ControlOp>> = {
  If: ifOp,
  Loop: loopOp,
  Scan: scanOp,
  SequenceMap: sequenceMapOp,
};
