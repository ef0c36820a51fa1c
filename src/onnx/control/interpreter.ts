/**
 * Runs a model with control flow (If, Loop, Scan, SequenceMap) or sequence and optional values: node by
 * node, in topological order, with shapes inferred as the values arrive — a Loop's carried values may
 * change shape from one iteration to the next, so no plan can be bound ahead. Standard ops go through
 * the same OpImpl inference, host folding and lowering as the planned executor (executor.ts), their
 * kernels submitted as runtime tasks on the run's device; a subgraph's ops likewise. Where a decision
 * needs a value (If's condition, Loop's trip count and condition, an index an op reads on the host), it
 * is read on the host, as ONNX Runtime's CPU provider does.
 */
import type { DType } from '../../core/dtype.js';
import { TandemError } from '../../core/errors.js';
import type { Tensor } from '../../memory/tensor.js';
import { Attrs, type AttrValue } from '../attributes.js';
import { deviceDType, fromDevice, scratchMakers, toDevice } from '../device-data.js';
import type { OnnxRuntime } from '../run-types.js';
import { KernelPlacement } from '../fallback.js';
import { submitIoKernel } from '../image-feed.js';
import { hostTensor, type HostTensor } from '../host-tensor.js';
import { nodeReads, type OnnxGraph, type OnnxModel, type OnnxNode } from '../model.js';
import { opImpl } from '../ops/table.js';
import type { LowerTarget, OpCall, OutSpec } from '../ops/types.js';
import { foldsOnHost, hostEvaluate, inferNode, requireOutputs } from '../plan.js';
import type { ControlHost } from './host.js';
import { CONTROL_OPS } from './ops.js';
import { Refs, hostVal, type RunValue, type TensorVal } from './values.js';

export interface InterpreterOptions {
  readonly device?: string;
  readonly fallback: string | readonly string[] | null;
  readonly floatDType: 'f32' | 'f16' | 'bf16';
  readonly precision?: 'f32' | 'tf32';
  readonly tags?: Readonly<Record<string, string>>;
  readonly maxLoopIterations: number;
  readonly signal?: AbortSignal;
}

/** A graph's values by name, falling back to the enclosing graph's (a subgraph's captures). */
class Scope {
  private readonly values = new Map<string, RunValue>();

  constructor(private readonly parent?: Scope) {}

  get(name: string, node: OnnxNode): RunValue {
    const v = this.values.get(name) ?? this.parent?.lookup(name);
    if (!v)
      throw new TandemError(
        'TANDEM_ERR_INTERNAL',
        `onnx: value '${name}' read by '${node.name}' is not bound`,
        {
          node: node.name,
          value: name,
        },
      );
    return v;
  }

  private lookup(name: string): RunValue | undefined {
    return this.values.get(name) ?? this.parent?.lookup(name);
  }

  set(name: string, v: RunValue): void {
    this.values.set(name, v);
  }

  take(name: string): RunValue | undefined {
    const v = this.values.get(name);
    this.values.delete(name);
    return v;
  }

  drain(): RunValue[] {
    const all = [...this.values.values()];
    this.values.clear();
    return all;
  }
}

export class GraphInterpreter implements ControlHost {
  readonly opset: number;
  readonly maxLoopIterations: number;
  private readonly refs: Refs;
  private readonly placement: KernelPlacement;
  /** Device copies of initializers and Constant values, uploaded once per run. */
  private readonly uploads = new Map<HostTensor, Tensor>();
  private readonly stable = new Set<HostTensor>();
  /** The scope a node runs in, for the subgraphs it starts. */
  private readonly scopes = new Map<OnnxNode, Scope>();
  /** Kernels submitted so far (0: everything ran on the host). */
  kernels = 0;

  constructor(
    private readonly model: OnnxModel,
    private readonly rt: OnnxRuntime,
    private readonly opts: InterpreterOptions,
  ) {
    this.opset = model.opset;
    this.maxLoopIterations = opts.maxLoopIterations;
    this.refs = new Refs((t) => rt.free(t));
    this.placement = new KernelPlacement(rt, opts.device, opts.fallback);
    const collect = (g: {
      nodes: readonly OnnxNode[];
      initializers: ReadonlyMap<string, HostTensor>;
    }): void => {
      for (const t of g.initializers.values()) this.stable.add(t);
      for (const n of g.nodes) {
        const v = n.opType === 'Constant' ? n.attrs.get('value') : undefined;
        if (typeof v === 'object' && 'data' in v) this.stable.add(v);
        for (const sub of n.graphs?.values() ?? []) collect(sub);
      }
    };
    collect(model);
  }

  get fellBack(): ReadonlySet<string> {
    return this.placement.fellBack;
  }

  /** Runs the main graph on bound inputs (owned by the run); the outputs' values, owned by the caller. */
  async run(inputs: ReadonlyMap<string, RunValue>): Promise<RunValue[]> {
    return this.runScope(
      this.model,
      undefined,
      inputs,
      this.model.outputs.map((o) => o.name),
    );
  }

  /** Frees whatever the run still holds (called once, after the outputs were read). */
  close(): void {
    this.refs.releaseAll();
    for (const t of this.uploads.values()) this.rt.free(t);
    this.uploads.clear();
  }

  adopt(t: Tensor): void {
    this.refs.adopt(t);
  }

  /**
   * `x` cast to `dtype` on the run's device, into a new tensor the caller owns (x is left to the caller):
   * an f16/bf16 run's float inputs go up as f32 and are narrowed there, its outputs widened there before
   * the read, as the planned executor does, instead of converting every element on the host.
   */
  castOnDevice(x: Tensor, dtype: DType, label: string): Tensor {
    const y = this.rt.tensor(x.shape, dtype);
    submitIoKernel(this.rt, 'cast', { x, y }, {}, label, this.placement, this.opts.tags);
    this.kernels++;
    return y;
  }

  deviceType(v: TensorVal): DType {
    return deviceDType(v.type, this.opts.floatDType);
  }

  retain<V extends RunValue>(v: V): V {
    return this.refs.retain(v);
  }

  release(v: RunValue | undefined): void {
    this.refs.release(v);
  }

  checkCancelled(node: OnnxNode): void {
    if (this.opts.signal?.aborted)
      throw new TandemError(
        'TANDEM_ERR_CANCELLED',
        `onnx: the run was cancelled (at ${node.opType} '${node.name}')`,
        {
          node: node.name,
        },
      );
  }

  async readHost(v: TensorVal): Promise<HostTensor> {
    if (v.host) return v.host;
    const data = await this.rt.read(v.dev!);
    return hostTensor(v.type, v.dims, fromDevice(data, v.dev!.dtype));
  }

  async runGraph(node: OnnxNode, g: OnnxGraph, inputs: readonly RunValue[]): Promise<RunValue[]> {
    if (inputs.length !== g.inputs.length) {
      for (const v of inputs) this.release(v);
      throw new TandemError(
        'TANDEM_ERR_BAD_DATA',
        `onnx: the subgraph of ${node.opType} '${node.name}' has ${g.inputs.length} inputs, the op binds ${inputs.length}`,
        { reason: 'node', node: node.name, op: node.opType },
      );
    }
    const bound = new Map(g.inputs.map((v, i) => [v.name, inputs[i]!] as const));
    return this.runScope(
      g,
      this.scopes.get(node),
      bound,
      g.outputs.map((o) => o.name),
    );
  }

  private async runScope(
    g: { nodes: readonly OnnxNode[]; initializers: ReadonlyMap<string, HostTensor> },
    parent: Scope | undefined,
    bound: ReadonlyMap<string, RunValue>,
    outputs: readonly string[],
  ): Promise<RunValue[]> {
    const scope = new Scope(parent);
    for (const [name, t] of g.initializers) scope.set(name, hostVal(t, true));
    for (const [name, v] of bound) scope.set(name, v);
    // Values of this scope die after their last reader (subgraphs' captures count as reads).
    const lastReader = new Map<string, number>();
    g.nodes.forEach((n, k) => {
      for (const x of nodeReads(n)) if (x !== '') lastReader.set(x, k);
    });
    const keep = new Set(outputs);
    try {
      for (let k = 0; k < g.nodes.length; k++) {
        const node = g.nodes[k]!;
        const ins = node.inputs.map((x) => (x === '' ? undefined : scope.get(x, node)));
        this.scopes.set(node, scope);
        let outs: Array<RunValue | undefined>;
        try {
          outs = await this.runNode(node, ins);
        } finally {
          this.scopes.delete(node);
        }
        node.outputs.forEach((o, i) => {
          if (o !== '' && outs[i]) scope.set(o, outs[i]!);
          else this.release(outs[i]);
        });
        for (const x of new Set(nodeReads(node)))
          if (lastReader.get(x) === k && !keep.has(x)) this.release(scope.take(x));
      }
      return outputs.map((o) => this.retain(scope.get(o, g.nodes[g.nodes.length - 1] ?? OUTPUT_NODE)));
    } finally {
      for (const v of scope.drain()) this.release(v);
    }
  }

  private async runNode(
    node: OnnxNode,
    ins: ReadonlyArray<RunValue | undefined>,
  ): Promise<Array<RunValue | undefined>> {
    const control = node.domain === '' ? CONTROL_OPS[node.opType] : undefined;
    if (control) return control(node, ins, this);
    // Identity passes sequences and optionals through (the same tensors, one more holder).
    if (node.opType === 'Identity' && ins[0] && ins[0].kind !== 'tensor') return [this.retain(ins[0])];
    const tensors = ins.map((v, i) => {
      if (v === undefined || v.kind === 'tensor') return v;
      throw new TandemError(
        'TANDEM_ERR_BAD_DATA',
        `onnx: ${node.opType} node '${node.name}' input ${i} ('${node.inputs[i]}') is a ${v.kind}, not a tensor`,
        { reason: 'node', node: node.name, op: node.opType },
      );
    });
    return this.standard(node, node, this.opset, tensors);
  }

  apply(
    node: OnnxNode,
    opType: string,
    attrs: Readonly<Record<string, AttrValue>>,
    inputs: ReadonlyArray<TensorVal | undefined>,
  ): Promise<TensorVal[]> {
    const op: OnnxNode = {
      name: `${node.name}/${opType}`,
      opType,
      domain: '',
      inputs: inputs.map((v, i) => (v ? `#${i}` : '')),
      outputs: ['#y'],
      attrs: new Map(Object.entries(attrs)),
    };
    return this.standard(node, op, 13, inputs);
  }

  /** A standard op: folded on the host, or lowered onto kernels submitted on the run's device. */
  private async standard(
    owner: OnnxNode,
    node: OnnxNode,
    opset: number,
    given: ReadonlyArray<TensorVal | undefined>,
  ): Promise<TensorVal[]> {
    const impl = opImpl(node.opType, node.domain, opset);
    // Inputs the op reads on the host (all of a host-only op's) are read back when computed.
    const ins = [...given];
    const hostIdx = impl.lower ? (impl.hostInputs ?? []) : ins.map((_, i) => i);
    for (const i of hostIdx) {
      const v = ins[i];
      if (v && !v.host) ins[i] = { ...v, host: await this.readHost(v) };
    }
    const call: OpCall = { node, attrs: new Attrs(node.opType, node.attrs), opset, inputs: ins };
    const present = ins.filter((v): v is TensorVal => v !== undefined);
    if (foldsOnHost(impl, present) || !impl.lower) {
      const constant = present.every((v) => v.constant);
      const outs = hostEvaluate(impl, call, ins);
      requireOutputs(node, outs.length);
      return outs.map((t) => hostVal(t, constant));
    }
    const specs = inferNode(impl, call);
    requireOutputs(node, specs.length);
    const made: Array<Tensor | undefined> = [];
    const scratch: Tensor[] = [];
    const label = owner === node ? `${node.opType}:${node.name}` : `${owner.opType}:${node.name}`;
    try {
      impl.lower(call, this.target(ins, specs, made, scratch, label), specs);
    } catch (err) {
      for (const t of made) if (t) this.rt.free(t);
      throw err;
    } finally {
      for (const t of scratch) this.rt.free(t);
    }
    return specs.map((s, i) => {
      let t = made[i];
      if (!t) {
        // An output the lowering left unwritten (a node output nobody reads): still a value.
        t = this.rt.tensor(s.dims, deviceDType(s.type, this.opts.floatDType));
      }
      this.refs.adopt(t);
      return { kind: 'tensor', type: s.type, dims: s.dims, dev: t, constant: false };
    });
  }

  private target(
    ins: ReadonlyArray<TensorVal | undefined>,
    specs: readonly OutSpec[],
    made: Array<Tensor | undefined>,
    scratch: Tensor[],
    label: string,
  ): LowerTarget {
    return {
      gemmPrecision: this.opts.precision === 'tf32' ? 'tf32' : 'default',
      input: (i) => this.deviceOf(ins[i]!, scratch),
      output: (i) =>
        (made[i] ??= this.rt.tensor(specs[i]!.dims, deviceDType(specs[i]!.type, this.opts.floatDType))),
      ...scratchMakers(this.rt, scratch),
      submit: (kernel, args, scalars) => {
        const device = this.placement.deviceFor(kernel, args, scalars ?? {}, label);
        this.kernels++;
        this.rt.submit({ kernel, args, scalars: scalars ?? {}, device, name: label, tags: this.opts.tags });
      },
    };
  }

  /** The value's device tensor: its own, or an upload of its host contents (kept per run for constants). */
  private deviceOf(v: TensorVal, scratch: Tensor[]): Tensor {
    if (v.dev) return v.dev;
    const host = v.host!;
    const cached = this.uploads.get(host);
    if (cached) return cached;
    const dtype = deviceDType(v.type, this.opts.floatDType);
    const t = this.rt.tensor(v.dims, dtype, toDevice(host.data, dtype));
    if (this.stable.has(host)) this.uploads.set(host, t);
    else scratch.push(t);
    return t;
  }
}

/** Names the reader of a graph output in errors when a graph has no nodes. */
const OUTPUT_NODE: OnnxNode = {
  name: '(graph output)',
  opType: '',
  domain: '',
  inputs: [],
  outputs: [],
  attrs: new Map(),
};
