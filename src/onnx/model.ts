/**
 * The ONNX model as Tandem reads it: decoded, checked and in topological order. Everything a later
 * step needs is resolved here once (attributes to plain values, initializers and Constant values to
 * host tensors, symbolic dimensions kept by name), so the shape planner and the executor never touch
 * protobuf objects.
 */
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { TandemError } from '../core/errors.js';
import { attributeValue, type AttrValue, type ValueKind } from './attributes.js';

export type { ValueKind } from './attributes.js';
import { elemTypeOf, type ElemType, type HostTensor } from './host-tensor.js';
import {
  badModel,
  decodeModel,
  int64,
  type GraphProto,
  type Int64,
  type NodeProto,
  type TypeProto,
  type ValueInfoProto,
} from './proto.js';
import { tensorFromProto } from './tensor-proto.js';

/** The opsets of the default domain Tandem runs (PaddleOCR's recognizer is exported at opset 9). */
export const MIN_OPSET = 9;
export const MAX_OPSET = 21;

/** AttributeProto.AttributeType numbers of the attributes parsed here rather than in attributes.ts. */
const ATTR_GRAPH = 5;
const ATTR_TYPE_PROTO = 13;

/**
 * A graph input or output: element type and dims (a number, a symbolic name, or null = unknown); for a
 * sequence or an optional, those of its tensors.
 */
export interface ValueInfo {
  readonly name: string;
  readonly type: ElemType;
  readonly dims: ReadonlyArray<number | string | null> | null;
  /** Absent: a tensor. */
  readonly kind?: ValueKind;
}

/** A subgraph attribute (If's branches, Loop's and Scan's body). */
export interface OnnxGraph {
  readonly name: string;
  readonly nodes: readonly OnnxNode[];
  /** The body's formal inputs, bound by the op that runs it (all of them: none has a default). */
  readonly inputs: readonly ValueInfo[];
  readonly outputs: readonly ValueInfo[];
  readonly initializers: ReadonlyMap<string, HostTensor>;
  /** Values the graph (or a graph nested in it) reads from enclosing graphs, as the spec allows. */
  readonly captures: readonly string[];
}

export interface OnnxNode {
  readonly name: string;
  readonly opType: string;
  readonly domain: string;
  /** Input value names; '' marks an omitted optional input. */
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
  readonly attrs: ReadonlyMap<string, AttrValue>;
  /** Subgraph attributes by name (If, Loop, Scan, SequenceMap); absent when the node has none. */
  readonly graphs?: ReadonlyMap<string, OnnxGraph>;
}

export interface OnnxModel {
  readonly irVersion: number;
  /** The default domain's (ai.onnx) opset version. */
  readonly opset: number;
  readonly producer: string;
  /** Nodes in a topological order (every input produced before it is read). */
  readonly nodes: readonly OnnxNode[];
  /** Graph inputs the caller feeds (initializers listed as inputs are left out: they have defaults). */
  readonly inputs: readonly ValueInfo[];
  readonly outputs: readonly ValueInfo[];
  readonly initializers: ReadonlyMap<string, HostTensor>;
}

export interface LoadOptions {
  /** Directory external data files are resolved in; the file's directory for loadOnnxFile. */
  readonly baseDir?: string;
}

export function loadOnnxFile(path: string): OnnxModel {
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(path);
  } catch (err) {
    throw badModel('missing', `cannot read model file '${path}': ${(err as Error).message}`, { path });
  }
  return parseOnnxModel(bytes, { baseDir: dirname(path) });
}

export function parseOnnxModel(bytes: Uint8Array, opts: LoadOptions = {}): OnnxModel {
  try {
    return parseModel(bytes, opts);
  } catch (err) {
    if (err instanceof TandemError) throw err;
    // A field of a valid protobuf that makes no sense (a negative count, an absurd size): still bad data.
    throw badModel(
      'malformed',
      `the model is malformed: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

function parseModel(bytes: Uint8Array, opts: LoadOptions): OnnxModel {
  const m = decodeModel(bytes);
  const g = m.graph;
  if (!g || ((g.node ?? []).length === 0 && (g.output ?? []).length === 0)) {
    throw badModel('no-graph', 'the file decodes but holds no graph (is it an ONNX model?)');
  }
  const opset = defaultOpset(m.opsetImport ?? []);
  const initializers = new Map<string, HostTensor>();
  for (const t of g.initializer ?? []) initializers.set(t.name ?? '', tensorFromProto(t, opts));
  const nodes = parseNodes(g.node ?? [], graphScope(g, new Set()), opts);
  const inputs = (g.input ?? []).map(valueInfo).filter((v) => !initializers.has(v.name));
  const outputs = (g.output ?? []).map(valueInfo);
  const ordered = topologicalOrder(nodes, new Set([...inputs.map((v) => v.name), ...initializers.keys()]));
  for (const o of outputs) {
    if (
      !initializers.has(o.name) &&
      !inputs.some((v) => v.name === o.name) &&
      !ordered.some((n) => n.outputs.includes(o.name))
    ) {
      throw badModel('dangling', `graph output '${o.name}' is produced by no node`);
    }
  }
  return {
    irVersion: int64(m.irVersion as Int64),
    opset,
    producer: `${m.producerName ?? ''} ${m.producerVersion ?? ''}`.trim(),
    nodes: ordered,
    inputs,
    outputs,
    initializers,
  };
}

function defaultOpset(imports: ReadonlyArray<{ domain?: string | null; version?: Int64 }>): number {
  const entry = imports.find((o) => !o.domain || o.domain === 'ai.onnx');
  if (!entry) {
    const domains = imports.map((o) => o.domain).join(', ');
    throw new TandemError(
      'TANDEM_ERR_UNSUPPORTED',
      `onnx: the model imports no opset of the default (ai.onnx) domain, only: ${domains}`,
      { domains },
    );
  }
  const v = int64(entry.version);
  if (v < MIN_OPSET || v > MAX_OPSET) {
    throw new TandemError(
      'TANDEM_ERR_UNSUPPORTED',
      `onnx: opset ${v} of the default domain is not supported (Tandem runs opsets ${MIN_OPSET}–${MAX_OPSET})`,
      { opset: v, min: MIN_OPSET, max: MAX_OPSET },
    );
  }
  return v;
}

function valueInfo(v: ValueInfoProto): ValueInfo {
  return valueInfoOf(v, false);
}

/**
 * A value's kind, element type and dims. A subgraph's values may leave their type out (the op that runs
 * the body gives it): `lenient` reads those as tensors of unknown type and shape.
 */
function valueInfoOf(v: ValueInfoProto, lenient: boolean): ValueInfo {
  const name = v.name ?? '';
  if (!v.type && lenient) return { name, type: 'float', dims: null };
  const t = typeOfProto(v.type ?? {}, `graph value '${name}'`);
  const tt = t.tensor;
  const dims = tt.shape ? (tt.shape.dim ?? []).map(dimOf) : null;
  const type = elemTypeOf(tt.elemType ?? 0, `graph value '${name}'`);
  // Refused here, at load, rather than read as numbers later: a served model would otherwise accept
  // numbers for a string input and answer as if they were its data.
  if (type === 'string' || type === 'complex64' || type === 'complex128') {
    throw new TandemError(
      'TANDEM_ERR_UNSUPPORTED',
      `onnx: graph value '${name}' has element type ${type}, which Tandem does not support`,
      { value: name, type },
    );
  }
  return t.kind === 'tensor' ? { name, type, dims } : { name, type, dims, kind: t.kind };
}

type TensorTypeProto = NonNullable<TypeProto['tensorType']>;

/** A TypeProto as a value kind and its tensors' type; maps, sparse tensors and nestings past one are refused. */
function typeOfProto(t: TypeProto, where: string): { kind: ValueKind; tensor: TensorTypeProto } {
  const refuse = (): never => {
    throw new TandemError(
      'TANDEM_ERR_UNSUPPORTED',
      `onnx: ${where} is not a tensor, a sequence of tensors or an optional of either (maps and sparse tensors are not supported)`,
      { value: where },
    );
  };
  if (t.tensorType) return { kind: 'tensor', tensor: t.tensorType };
  if (t.sequenceType) return { kind: 'sequence', tensor: t.sequenceType.elemType?.tensorType ?? refuse() };
  const inner = t.optionalType?.elemType;
  if (inner?.tensorType) return { kind: 'optional-tensor', tensor: inner.tensorType };
  if (inner?.sequenceType)
    return { kind: 'optional-sequence', tensor: inner.sequenceType.elemType?.tensorType ?? refuse() };
  return refuse();
}

/** The value names a graph's nodes may read: its inputs, initializers, node outputs and the enclosing scope's. */
function graphScope(g: GraphProto, outer: ReadonlySet<string>): Set<string> {
  const names = new Set(outer);
  for (const v of g.input ?? []) names.add(v.name ?? '');
  for (const t of g.initializer ?? []) names.add(t.name ?? '');
  for (const n of g.node ?? []) for (const o of n.output ?? []) if (o !== '') names.add(o);
  return names;
}

function parseNodes(protos: readonly NodeProto[], scope: ReadonlySet<string>, opts: LoadOptions): OnnxNode[] {
  return protos.map((n, i) => {
    const opType = n.opType ?? '';
    const name = n.name || `${opType}_${i}`;
    const attrs = new Map<string, AttrValue>();
    const graphs = new Map<string, OnnxGraph>();
    for (const a of n.attribute ?? []) {
      if (a.type === ATTR_GRAPH && a.g)
        graphs.set(a.name ?? '', parseSubgraph(a.g, scope, `${opType} '${name}'`, opts));
      else if (a.type === ATTR_TYPE_PROTO && a.tp) {
        const t = typeOfProto(a.tp, `${opType} attribute '${a.name ?? ''}'`);
        attrs.set(a.name ?? '', { valueKind: t.kind, elemType: elemTypeOf(t.tensor.elemType ?? 0, opType) });
      } else attrs.set(a.name ?? '', attributeValue(a, opType, opts));
    }
    return {
      name,
      opType,
      domain: n.domain === 'ai.onnx' ? '' : (n.domain ?? ''),
      inputs: n.input ?? [],
      outputs: n.output ?? [],
      attrs,
      ...(graphs.size > 0 ? { graphs } : {}),
    };
  });
}

/**
 * A subgraph attribute: its nodes in order, and the values it captures from the enclosing graphs. A value
 * that neither the subgraph nor an enclosing graph provides is a malformed model, named at load.
 */
function parseSubgraph(
  g: GraphProto,
  outer: ReadonlySet<string>,
  owner: string,
  opts: LoadOptions,
): OnnxGraph {
  const scope = graphScope(g, outer);
  const initializers = new Map<string, HostTensor>();
  for (const t of g.initializer ?? []) initializers.set(t.name ?? '', tensorFromProto(t, opts));
  const nodes = parseNodes(g.node ?? [], scope, opts);
  const inputs = (g.input ?? []).map((v) => valueInfoOf(v, true));
  const local = new Set([...inputs.map((v) => v.name), ...initializers.keys()]);
  for (const n of nodes) for (const o of n.outputs) if (o !== '') local.add(o);
  const captures = new Set<string>();
  for (const n of nodes)
    for (const x of nodeReads(n)) {
      if (x === '' || local.has(x)) continue;
      if (!outer.has(x))
        throw badModel(
          'dangling',
          `node '${n.name}' (${n.opType}) in the subgraph of ${owner} reads '${x}', which neither the subgraph nor an enclosing graph provides`,
          { node: n.name, value: x, owner },
        );
      captures.add(x);
    }
  const available = new Set([...inputs.map((v) => v.name), ...initializers.keys(), ...captures]);
  const outputs = (g.output ?? []).map((v) => valueInfoOf(v, true));
  for (const o of outputs)
    if (!local.has(o.name) && !outer.has(o.name))
      throw badModel('dangling', `output '${o.name}' of the subgraph of ${owner} is produced by no node`, {
        value: o.name,
        owner,
      });
    else if (!local.has(o.name)) captures.add(o.name);
  return {
    name: g.name ?? '',
    nodes: topologicalOrder(nodes, available),
    inputs,
    outputs,
    initializers,
    captures: [...captures],
  };
}

/** The values a node reads: its inputs, and what its subgraphs capture from the graph it is in. */
export function nodeReads(n: OnnxNode): string[] {
  const reads = [...n.inputs];
  for (const g of n.graphs?.values() ?? []) reads.push(...g.captures);
  return reads;
}

type DimProto = { dimParam?: string | null; dimValue?: Int64; value?: string };

/** A dimension: its symbolic name, its size, or null when the file leaves it unknown. */
function dimOf(d: DimProto): number | string | null {
  if (d.dimParam) return d.dimParam;
  if (d.value === 'dimValue' || int64(d.dimValue) > 0) return int64(d.dimValue);
  return null;
}

/**
 * Kahn's algorithm over value producers. A node reading a value nobody produces is a malformed graph;
 * nodes left over when no node is ready form a cycle, named in the error.
 */
export function topologicalOrder(nodes: readonly OnnxNode[], available: ReadonlySet<string>): OnnxNode[] {
  const producer = new Map<string, number>();
  nodes.forEach((n, i) => {
    for (const o of n.outputs) {
      if (o === '') continue;
      if (producer.has(o) || available.has(o))
        throw badModel('duplicate-value', `value '${o}' is produced twice (node '${n.name}')`);
      producer.set(o, i);
    }
  });
  const waiting = new Array<number>(nodes.length).fill(0);
  const readers: number[][] = nodes.map(() => []);
  nodes.forEach((n, i) => {
    for (const x of new Set(nodeReads(n))) {
      if (x === '' || available.has(x)) continue;
      const p = producer.get(x);
      if (p === undefined)
        throw badModel(
          'dangling',
          `node '${n.name}' (${n.opType}) reads '${x}', which no node, input or initializer provides`,
          { node: n.name, value: x },
        );
      waiting[i]!++;
      readers[p]!.push(i);
    }
  });
  const ready = nodes.map((_, i) => i).filter((i) => waiting[i] === 0);
  const order: OnnxNode[] = [];
  for (let k = 0; k < ready.length; k++) {
    const i = ready[k]!;
    order.push(nodes[i]!);
    for (const r of readers[i]!) if (--waiting[r]! === 0) ready.push(r);
  }
  if (order.length !== nodes.length) {
    const stuck = nodes.filter((_, i) => waiting[i]! > 0).map((n) => n.name);
    throw badModel(
      'cycle',
      `the graph has a cycle through ${stuck.slice(0, 5).join(', ')}${stuck.length > 5 ? ', …' : ''}`,
      { nodes: stuck.slice(0, 20) },
    );
  }
  return order;
}
