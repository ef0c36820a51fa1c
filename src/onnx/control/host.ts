/**
 * What the control-flow and sequence ops get from the interpreter that runs them (interpreter.ts): host
 * reads of computed values, subgraph runs, and the standard ops applied to values (slicing a Scan input,
 * stacking scan outputs) — so those ops need no kernels of their own.
 */
import type { AttrValue } from '../attributes.js';
import type { HostTensor } from '../host-tensor.js';
import type { OnnxGraph, OnnxNode } from '../model.js';
import type { RunValue, TensorVal } from './values.js';

export interface ControlHost {
  /** The opset of the default domain (the semantics of the ops). */
  readonly opset: number;
  /** Loop iterations allowed per Loop node and run (RunOptions.maxLoopIterations). */
  readonly maxLoopIterations: number;
  /** The value's contents on the host: read back from the device when computed there (a sync point). */
  readHost(v: TensorVal): Promise<HostTensor>;
  /**
   * Runs a subgraph in the scope of `node` with its inputs bound, in order, to `inputs` (ownership passes
   * to the subgraph); answers its outputs, owned by the caller.
   */
  runGraph(node: OnnxNode, g: OnnxGraph, inputs: readonly RunValue[]): Promise<RunValue[]>;
  /**
   * A standard op (opset-13 semantics) on tensor values, for `node`: folded on the host when its inputs
   * are, else its kernels submitted. Outputs owned by the caller.
   */
  apply(
    node: OnnxNode,
    opType: string,
    attrs: Readonly<Record<string, AttrValue>>,
    inputs: ReadonlyArray<TensorVal | undefined>,
  ): Promise<TensorVal[]>;
  /** Adds a holder to every device tensor of `v` (a value returned again, an item put into a sequence). */
  retain<V extends RunValue>(v: V): V;
  release(v: RunValue | undefined): void;
  /** Checks the run is still wanted (RunOptions.signal): throws TANDEM_ERR_CANCELLED otherwise. */
  checkCancelled(node: OnnxNode): void;
}

/** A control or sequence op: its outputs from its inputs (borrowed), each output owned by the caller. */
export type ControlOp = (
  node: OnnxNode,
  inputs: ReadonlyArray<RunValue | undefined>,
  host: ControlHost,
) => Promise<Array<RunValue | undefined>>;
