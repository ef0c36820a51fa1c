/**
 * Messages between the CPU queue (main thread) and its worker thread. Batches are flat Float64Arrays
 * whose buffers are transferred, not cloned, with the rare extras (tensors, scalars, predecessors)
 * kept aside, so that tiny tasks cost well under a microsecond of messaging each.
 */
import type { ScalarValue, TensorDesc } from '../device.js';

export interface CustomCpuImpl {
  /** URL of an ES module exporting the kernel function (a CpuKernel). */
  readonly module: string;
  readonly export: string;
}

export interface WireExtra {
  readonly buffers: readonly number[];
  readonly descs: readonly TensorDesc[];
  readonly scalars: Readonly<Record<string, ScalarValue>>;
  readonly after: readonly number[];
  readonly custom?: CustomCpuImpl;
}

/**
 * Stride of a run batch's `tasks`: [taskId, opIndex, extraIndex or -1, predecessor id or -1]. A chain
 * follower names its one in-queue predecessor inline; several go in the extra's `after`.
 */
export const TASK_STRIDE = 4;
/** Flush a batch early once it holds this many tasks, so the worker starts while we submit. */
export const EARLY_FLUSH_TASKS = 2048;
/** Stride of a done batch's `results`: [taskId, ok (1/0), startEpochMs, endEpochMs]. */
export const RESULT_STRIDE = 4;

export type ToWorker =
  | {
      readonly t: 'run';
      /** Op names to append to the worker's op table (indices continue from the last batch). */
      readonly newOps: readonly string[];
      /** `count` tasks of TASK_STRIDE numbers from the start (the buffer may be longer). */
      readonly count: number;
      readonly tasks: Float64Array;
      readonly extras: readonly WireExtra[];
      readonly bufs: ReadonlyArray<readonly [number, SharedArrayBuffer]>;
    }
  | { readonly t: 'release'; readonly ids: readonly number[] }
  | { readonly t: 'stop' };

export type FromWorker =
  | { readonly t: 'ready'; readonly engine: string; readonly blasReason: string }
  | {
      readonly t: 'done';
      /** `count` results of RESULT_STRIDE numbers from the start (the buffer may be longer). */
      readonly count: number;
      readonly results: Float64Array;
      /** [taskId, code, message] for the failed ones. */
      readonly errors: ReadonlyArray<readonly [number, string, string]>;
    };

export interface WorkerConfig {
  readonly index: number;
  readonly gemmEngine: 'auto' | 'openblas' | 'wasm' | 'ts';
  /** OpenBLAS threads per call (process-wide); unset keeps OpenBLAS's default (all cores). */
  readonly blasThreads?: number;
  /** The kernel table's module URL (BackendContext.kernelTableModule); none: custom kernels only. */
  readonly kernelTable?: string;
}
