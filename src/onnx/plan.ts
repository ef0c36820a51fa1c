/**
 * Binding a model to concrete input shapes: shape inference for every value, constant folding on the
 * host (every node whose inputs are all known there: Constant, shape subgraphs such as
 * Shape→Gather→Concat→Reshape, initializer arithmetic), and the list of nodes left for the device.
 * The plan depends only on the input shapes (and integer inputs' values), so the executor caches it.
 */
import { TandemError } from '../core/errors.js';
import { Attrs } from './attributes.js';
import { isFloatType, type ElemType, type HostTensor } from './host-tensor.js';
import type { OnnxModel, OnnxNode } from './model.js';
import { fuseSteps, fusionEnabled } from './fuse.js';
import { activationOf } from './ops/elementwise.js';
import { opImpl } from './ops/table.js';
import type { OpCall, OpImpl } from './ops/types.js';
import type { DeviceStep, PlannedValue } from './plan-types.js';

export type { DeviceStep, PlannedValue } from './plan-types.js';

export interface Plan {
  readonly values: ReadonlyMap<string, PlannedValue>;
  readonly steps: readonly DeviceStep[];
  /** For each value read by a step: the index of the last step reading it (frees it after). */
  readonly lastReader: ReadonlyMap<string, number>;
}

/** A graph input as bound: dims, and its values when it is an integer input (known on the host). */
export interface BoundInput {
  readonly type: ElemType;
  readonly dims: readonly number[];
  readonly host?: HostTensor;
}

export function checkInput(
  model: OnnxModel,
  name: string,
  got: { type: ElemType; dims: readonly number[] },
): void {
  const info = model.inputs.find((v) => v.name === name);
  if (!info)
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `onnx: the model has no input '${name}' (inputs: ${model.inputs.map((v) => v.name).join(', ')})`,
      { input: name },
    );
  const compatible = info.type === got.type || (isFloatType(info.type) && isFloatType(got.type));
  if (!compatible)
    throw new TandemError('TANDEM_ERR_DTYPE', `onnx: input '${name}' must be ${info.type}, got ${got.type}`, {
      input: name,
      want: info.type,
      got: got.type,
    });
  if (info.dims) {
    const ok =
      info.dims.length === got.dims.length &&
      info.dims.every((d, i) => typeof d !== 'number' || d === got.dims[i]);
    if (!ok) {
      const want = info.dims.map((d) => (d === null ? '?' : d)).join(', ');
      throw new TandemError(
        'TANDEM_ERR_SHAPE',
        `onnx: input '${name}' must have shape [${want}], got [${got.dims.join(', ')}]`,
        { input: name, want: info.dims, got: got.dims },
      );
    }
  }
}

/**
 * Conv or ConvTranspose followed by an activation that is the only reader of its output: one step, the
 * activation applied by the convolution kernel before its store (onnx_conv's activation scalars), so
 * the intermediate is never written. The fused step writes the activation's output value.
 */
function fuseActivations(steps: readonly DeviceStep[], graphOutputs: ReadonlySet<string>): DeviceStep[] {
  const readers = new Map<string, number>();
  for (const s of steps)
    for (const n of new Set(s.node.inputs)) if (n !== '') readers.set(n, (readers.get(n) ?? 0) + 1);
  const out: DeviceStep[] = [];
  for (let k = 0; k < steps.length; k++) {
    const s = steps[k]!;
    const next = steps[k + 1];
    const y = s.node.outputs[0]!;
    const act = next && next.node.inputs[0] === y ? activationOf(next.call) : undefined;
    if (
      (s.node.opType === 'Conv' || s.node.opType === 'ConvTranspose') &&
      act &&
      readers.get(y) === 1 &&
      !graphOutputs.has(y)
    ) {
      const node = { ...s.node, outputs: [next.node.outputs[0]!], name: `${s.node.name}+${next.node.name}` };
      out.push({ ...s, node, call: { ...s.call, node, activation: act }, outputs: next.outputs });
      k++;
      continue;
    }
    out.push(s);
  }
  return out;
}

/** The op's float64 evaluation; a value too large to hold on the host (RangeError) is a LIMIT error. */
export function hostEvaluate(
  impl: OpImpl,
  call: OpCall,
  ins: ReadonlyArray<PlannedValue | undefined>,
): HostTensor[] {
  try {
    return impl.evaluate(
      call,
      ins.map((v) => v?.host),
    );
  } catch (err) {
    if (err instanceof RangeError) {
      throw new TandemError(
        'TANDEM_ERR_LIMIT',
        `onnx: ${call.node.opType} node '${call.node.name}' makes a value too large to evaluate on the host: ${err.message}`,
        { op: call.node.opType, node: call.node.name },
      );
    }
    throw malformedNode(call, err);
  }
}

/**
 * What an op's inference or evaluation threw that is not a TandemError: the node is not what the op
 * expects (too few inputs, an attribute of the wrong kind) and the op tripped over it. Named as the
 * file's fault (BAD_DATA, node) instead of surfacing as an internal error (HTTP 500) of the service.
 */
function malformedNode(call: OpCall, err: unknown): TandemError {
  if (err instanceof TandemError) return err;
  const { opType, name, inputs } = call.node;
  return new TandemError(
    'TANDEM_ERR_BAD_DATA',
    `onnx: ${opType} node '${name}' (${inputs.length} inputs) is malformed: ${err instanceof Error ? err.message : String(err)}`,
    { op: opType, node: name, reason: 'node' },
    { cause: err },
  );
}

export function inferNode(impl: OpImpl, call: OpCall): ReturnType<OpImpl['infer']> {
  try {
    return impl.infer(call);
  } catch (err) {
    throw malformedNode(call, err);
  }
}

/** An optional output the op does not compute (MaxPool's Indices, LayerNorm's Mean ...) is refused by name. */
export function requireOutputs(node: OnnxNode, computed: number): void {
  node.outputs.forEach((o, i) => {
    if (o !== '' && i >= computed) {
      throw new TandemError(
        'TANDEM_ERR_UNSUPPORTED',
        `onnx: output ${i} ('${o}') of ${node.opType} is not supported`,
        { op: node.opType, node: node.name, output: i },
      );
    }
  });
}

/**
 * Whether a node is evaluated on the host instead of submitted: its inputs are all known there and it has
 * no kernel, depends on no graph input (weights), or carries no float data (shape arithmetic); Shape and
 * Size read dims only.
 */
export function foldsOnHost(
  impl: OpImpl,
  present: ReadonlyArray<{ type: ElemType; host?: unknown; constant: boolean }>,
): boolean {
  if (impl.shapeOnly) return true;
  const allHost = present.every((v) => v.host !== undefined);
  const constant = present.every((v) => v.constant);
  const floatIn = present.some((v) => isFloatType(v.type));
  return allHost && (!impl.lower || constant || !floatIn);
}

export function bindPlan(
  model: OnnxModel,
  inputs: ReadonlyMap<string, BoundInput>,
  opts: { foldAll?: boolean } = {},
): Plan {
  const values = new Map<string, PlannedValue>();
  for (const [name, t] of model.initializers)
    values.set(name, { type: t.type, dims: t.dims, host: t, constant: true });
  for (const info of model.inputs) {
    const b = inputs.get(info.name);
    if (!b)
      throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `onnx: input '${info.name}' is missing`, {
        input: info.name,
      });
    checkInput(model, info.name, b);
    values.set(info.name, { type: info.type, dims: b.dims, host: b.host, constant: false });
  }
  for (const name of inputs.keys())
    if (!model.inputs.some((v) => v.name === name)) checkInput(model, name, inputs.get(name)!);
  const steps: DeviceStep[] = [];
  const lastReader = new Map<string, number>();
  for (const node of model.nodes) {
    const impl = opImpl(node.opType, node.domain, model.opset);
    const ins = node.inputs.map((n) => (n === '' ? undefined : values.get(n)));
    const call: OpCall = { node, attrs: new Attrs(node.opType, node.attrs), opset: model.opset, inputs: ins };
    const present = ins.filter((v): v is PlannedValue => v !== undefined);
    const constant = present.every((v) => v.constant);
    if (opts.foldAll || foldsOnHost(impl, present)) {
      const outs = hostEvaluate(impl, call, ins);
      node.outputs.forEach((o, i) => {
        if (o !== '' && outs[i])
          values.set(o, { type: outs[i]!.type, dims: outs[i]!.dims, host: outs[i], constant });
      });
      requireOutputs(node, outs.length);
      continue;
    }
    if (!impl.lower) {
      throw new TandemError(
        'TANDEM_ERR_UNSUPPORTED',
        `onnx: operator ${node.opType} (node '${node.name}') runs only on values known before the run (shapes, constants); here it reads computed data`,
        { op: node.opType, node: node.name },
      );
    }
    const specs = inferNode(impl, call);
    const outputs = specs.map((s) => ({ type: s.type, dims: s.dims, constant: false }));
    node.outputs.forEach((o, i) => {
      if (o !== '' && outputs[i]) values.set(o, outputs[i]!);
    });
    requireOutputs(node, outputs.length);
    steps.push({ node, impl, call, outputs });
  }
  const graphOutputs = new Set(model.outputs.map((o) => o.name));
  const fused = fusionEnabled()
    ? fuseSteps(steps, values, graphOutputs)
    : fuseActivations(steps, graphOutputs);
  fused.forEach((step, k) => {
    for (const n of step.node.inputs) if (n !== '') lastReader.set(n, k);
  });
  return { values, steps: fused, lastReader };
}
