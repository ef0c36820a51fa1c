/**
 * What a model version's dynamic batcher is configured with (Triton's knobs, docs/serving.md) and the
 * shapes of what it hands back: a request's outcome, the function that runs a batch, batch listeners.
 */
import type { TandemError } from '../../core/errors.js';

export interface BatchingConfig {
  /** The largest batch sent (already capped by the model's own maximum). */
  readonly maxBatchSize: number;
  /** Sizes sent as soon as that many requests wait (the largest that fits); others wait the delay. */
  readonly preferredBatchSizes: readonly number[];
  /** How long the oldest waiting request may wait for others to join it (from its arrival). */
  readonly maxQueueDelayUs: number;
  /** Priority levels: a request's priority p is served at level clamp(p, 0, levels − 1), higher first. */
  readonly priorityLevels: number;
  /**
   * How levels share a batch. 'fill' (Triton's): the highest levels first, the rest of the batch filled
   * from lower ones. 'level': a batch holds one level only, so high-priority requests never wait for
   * the compute of low-priority ones in their own batch (only for the batch already running); costs one
   * more, smaller batch whenever both levels wait.
   */
  readonly priorityBatching: 'fill' | 'level';
  /** Requests waiting (not yet in a batch) at most; the ones over it are refused with 429. */
  readonly maxQueueSize: number;
  /** The default time a request may wait in the queue (0: no limit); a request's timeoutMs wins. */
  readonly timeoutUs: number;
  /** At the default timeout: refuse with 504 (reject), or serve it after all others (delay). */
  readonly onTimeout: 'reject' | 'delay';
  /** Batches running at once. */
  readonly instances: number;
}

export const DEFAULT_BATCHING: BatchingConfig = {
  maxBatchSize: 64,
  preferredBatchSizes: [],
  maxQueueDelayUs: 500,
  priorityLevels: 2,
  priorityBatching: 'fill',
  maxQueueSize: 1024,
  timeoutUs: 0,
  onTimeout: 'reject',
  instances: 1,
};

/** What a request gets back: its output or its error, with where its time went. */
export interface BatchOutcome<Out> {
  readonly output: Out | undefined;
  readonly error: TandemError | undefined;
  /** Microseconds from arrival until its batch started (or until it was refused). */
  readonly queueUs: number;
  /** Microseconds its batch ran (0 when it never ran). */
  readonly computeUs: number;
  /** The size of the batch it ran in (0 when it never ran). */
  readonly batchSize: number;
}

/** Runs one batch: one output or TandemError per item, in order; a throw fails the whole batch. */
export type BatchRunner<In, Out> = (
  items: readonly In[],
  batchId: number,
) => Promise<Array<Out | TandemError>>;

/** Called once per batch that ran (metrics, the dashboard's figures). */
export type BatchListener = (size: number, computeUs: number, failed: number) => void;

export interface SubmitOptions {
  readonly priority?: number;
  /** The client's own deadline in ms from now (always refused with 504 when it passes). */
  readonly timeoutMs?: number;
}
