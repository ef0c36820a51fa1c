/** Small ONNX models written with the real protobuf encoder, for the loader's and executor's tests. */
import {
  onnx,
  type GraphProto,
  type ModelProtoFields,
  type TensorProto,
  type ValueInfoProto,
} from '../../src/onnx/proto.js';

export interface NodeSpec {
  op: string;
  inputs: string[];
  outputs: string[];
  domain?: string;
  attrs?: Array<{
    name: string;
    i?: number;
    f?: number;
    ints?: number[];
    floats?: number[];
    s?: Uint8Array;
    strings?: Uint8Array[];
    t?: TensorProto;
    /** A subgraph (type 5): If's branches, Loop's and Scan's body. */
    g?: GraphProto;
    type: number;
  }>;
}

/** A graph value: a tensor (default), or a sequence of tensors (`sequence: true`). */
export interface ValueSpec {
  name: string;
  type?: number;
  dims: Array<number | string>;
  sequence?: boolean;
}

export interface ModelSpecForTest {
  opset?: number;
  nodes: NodeSpec[];
  inputs: ValueSpec[];
  outputs: ValueSpec[];
  initializers?: TensorProto[];
}

function valueInfo(v: ValueSpec): ValueInfoProto {
  const tensorType = {
    elemType: v.type ?? 1,
    shape: { dim: v.dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) },
  };
  return { name: v.name, type: v.sequence ? { sequenceType: { elemType: { tensorType } } } : { tensorType } };
}

function nodeProtos(nodes: NodeSpec[], prefix: string): NonNullable<GraphProto['node']> {
  return nodes.map((n, i) => ({
    name: `${prefix}${i}`,
    opType: n.op,
    domain: n.domain ?? '',
    input: n.inputs,
    output: n.outputs,
    attribute: n.attrs ?? [],
  }));
}

/** A subgraph for a graph attribute (`{ name, g: subgraph(...), type: 5 }`); its nodes are named b0, b1 … */
export function subgraph(spec: Omit<ModelSpecForTest, 'opset'>, name = 'body'): GraphProto {
  return {
    name,
    node: nodeProtos(spec.nodes, `${name}_n`),
    input: spec.inputs.map(valueInfo),
    output: spec.outputs.map(valueInfo),
    initializer: spec.initializers ?? [],
  };
}

export function encodeModel(spec: ModelSpecForTest): Uint8Array {
  const model: ModelProtoFields = {
    irVersion: 8,
    producerName: 'tandem-test',
    opsetImport: [{ domain: '', version: spec.opset ?? 17 }],
    graph: {
      name: 'g',
      node: nodeProtos(spec.nodes, 'n'),
      input: spec.inputs.map(valueInfo),
      output: spec.outputs.map(valueInfo),
      initializer: spec.initializers ?? [],
    },
  };
  return onnx.ModelProto.encode(model).finish();
}

export function floatTensor(name: string, dims: number[], values: number[]): TensorProto {
  return { name, dims, dataType: 1, floatData: values };
}

export function int64Tensor(name: string, dims: number[], values: number[]): TensorProto {
  return { name, dims, dataType: 7, int64Data: values };
}

/**
 * y = softmax(relu(x · W + b)) over the last axis: [N, T, 4] → [N, T, 3], the batch axis symbolic — the
 * served `onnx` kind's test model (a batchable graph with an initializer, an activation and a softmax).
 */
export function servedMlpModel(): Uint8Array {
  const W = [0.5, -1, 0.25, 1.5, 0.75, -0.5, -0.25, 0.1, 2, 1, -1.25, 0.3];
  return encodeModel({
    nodes: [
      { op: 'MatMul', inputs: ['x', 'W'], outputs: ['h'] },
      { op: 'Add', inputs: ['h', 'b'], outputs: ['hb'] },
      { op: 'Relu', inputs: ['hb'], outputs: ['r'] },
      { op: 'Softmax', inputs: ['r'], outputs: ['y'], attrs: [{ name: 'axis', i: -1, type: 2 }] },
    ],
    inputs: [{ name: 'x', dims: ['N', 'T', 4] }],
    outputs: [{ name: 'y', dims: ['N', 'T', 3] }],
    initializers: [floatTensor('W', [4, 3], W), floatTensor('b', [3], [0.1, -0.2, 0.3])],
  });
}
