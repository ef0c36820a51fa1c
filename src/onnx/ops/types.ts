/**
 * What each ONNX operator provides to the planner and the executor: output types and shapes from the
 * inputs' (shape inference at bind time), a float64 evaluation on the host (constant folding of shape
 * subgraphs and the whole-graph float64 reference), and optionally a lowering onto runtime kernels.
 */
import type { DType } from '../../core/dtype.js';
import type { Tensor } from '../../memory/tensor.js';
import type { Attrs } from '../attributes.js';
import type { ElemType, HostTensor } from '../host-tensor.js';
import type { OnnxNode } from '../model.js';

/** A value as the planner knows it: type and concrete dims, and its contents when known on the host. */
export interface ValueMeta {
  readonly type: ElemType;
  readonly dims: readonly number[];
  readonly host?: HostTensor;
}

export interface OpCall {
  readonly node: OnnxNode;
  readonly attrs: Attrs;
  /** The model's opset of the node's domain (the semantics to apply). */
  readonly opset: number;
  /** Inputs in node order; undefined for an omitted optional input. */
  readonly inputs: ReadonlyArray<ValueMeta | undefined>;
  /** An activation fused into this node's kernel (Conv → Relu …): onnx_unary's op and scalars. */
  readonly activation?: Readonly<Record<string, number | string>>;
  /**
   * Element-wise nodes fused after this one (src/onnx/fuse.ts), as an onnx_map program: a conv's
   * `epilogue` scalar, or the program of a fused chain's onnx_map.
   */
  readonly epilogue?: string;
}

export interface OutSpec {
  readonly type: ElemType;
  readonly dims: readonly number[];
}

/** What a lowering gets: device tensors of its inputs and (already allocated) outputs. */
export interface LowerTarget {
  /** GEMM precision for f32 convolutions on GPUs (RunOptions.precision): 'tf32' uses tensor cores. */
  readonly gemmPrecision?: 'default' | 'tf32';
  /** Device tensor of input i (created from the host value if it was host-known). */
  input(i: number): Tensor;
  /** Device tensor of output i, allocated with the inferred dims. */
  output(i: number): Tensor;
  /** A scratch tensor of `like`'s dtype, freed after the node's tasks are submitted. */
  scratch(dims: readonly number[], like: Pick<Tensor, 'dtype'>): Tensor;
  /**
   * A device tensor of values the lowering computed on the host from host-known inputs (Compress's
   * kept indices), freed with the scratch tensors.
   */
  constant(dims: readonly number[], dtype: DType, data: ArrayLike<number>): Tensor;
  submit(
    kernel: string,
    args: Record<string, Tensor>,
    scalars?: Record<string, number | string | boolean>,
  ): void;
}

export interface OpImpl {
  infer(c: OpCall): OutSpec[];
  evaluate(c: OpCall, x: ReadonlyArray<HostTensor | undefined>): HostTensor[];
  /** Inputs that must be known on the host (shapes, axes, pads ...): index list. */
  readonly hostInputs?: readonly number[];
  /** Reads only its inputs' dims (Shape, Size): always evaluated on the host. */
  readonly shapeOnly?: boolean;
  lower?(c: OpCall, t: LowerTarget, outs: readonly OutSpec[]): void;
}
