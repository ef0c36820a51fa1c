/**
 * What the executor's callers pass and get: the runtime it needs, inputs, options and outputs (apart from
 * executor.ts so that the control-flow interpreter, control/, names them without an import cycle).
 */
import type { Runtime } from '../runtime/runtime.js';
import type { ElemType } from './host-tensor.js';
import type { ImageFeed } from './image-feed.js';

export type OnnxRuntime = Pick<
  Runtime,
  'tensor' | 'submit' | 'submitSequence' | 'read' | 'write' | 'free' | 'canRun'
>;

/** One input as the caller gives it: dims and values in row-major order. */
export interface InputTensor {
  readonly dims: readonly number[];
  readonly data: ArrayLike<number>;
  /** Element type; the model's declared type when omitted. */
  readonly type?: ElemType;
}

export interface RunOptions {
  /**
   * rt.submit's `device` (a kind or an id): where the kernels run; the scheduler chooses when absent. A
   * kernel this device cannot run goes to `fallback` (fallback.ts).
   */
  readonly device?: string;
  /**
   * Where kernels `device` cannot run go: a kind or an id, or several tried in order (default 'cpu'); null
   * to refuse them.
   */
  readonly fallback?: string | readonly string[] | null;
  readonly tags?: Readonly<Record<string, string>>;
  /** Compute dtype for float values on device: 'f32' (default), or 'f16'/'bf16' (GPU, lower accuracy). */
  readonly floatDType?: 'f32' | 'f16' | 'bf16';
  /**
   * 'tf32': f32 convolutions' GEMMs on CUDA run on tensor cores with TF32 inputs (faster, about 1e-3
   * relative error per product); default full f32.
   */
  readonly precision?: 'f32' | 'tf32';
  /**
   * Profile the run node by node (each step waits for the previous one's tasks; slower): the result is
   * `lastProfile`. Also on when TANDEM_ONNX_PROFILE=1.
   */
  readonly profile?: boolean;
  /**
   * Submit the run's kernels as runtime sequences (a few tasks instead of one per kernel): the runtime's
   * per-task host work is paid per sequence. Intermediates the run would free early are held until their
   * sequence is submitted (runtime/sequence-collector.ts). Not with `profile`, which times each step's
   * own tasks. Default off.
   */
  readonly sequences?: boolean;
  /**
   * Inputs fed as uint8 pixels (N×H×W×3, data a Uint8Array) instead of the float N×3×H×W the graph
   * takes: each is uploaded as bytes and turned into the graph's input by one image_normalize task
   * before the run's first kernel, on `device` (default the run's own).
   */
  readonly images?: Readonly<Record<string, ImageFeed>>;
  /**
   * Models with control flow (control/): the iterations one Loop node may run in a run before it fails
   * with TANDEM_ERR_LIMIT (default 1,000,000), so a Loop whose condition never turns false ends.
   */
  readonly maxLoopIterations?: number;
  /** Models with control flow: aborting stops the run at the next node or Loop iteration (TANDEM_ERR_CANCELLED). */
  readonly signal?: AbortSignal;
}

export interface OutputTensor {
  readonly type: ElemType;
  readonly dims: readonly number[];
  /** float32 for float outputs computed in f32, float64 otherwise (integers, doubles). */
  readonly data: Float32Array | Float64Array;
}
