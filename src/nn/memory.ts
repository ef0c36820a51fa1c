/**
 * How much device memory a training run needs, before it starts: parameters, their gradients, the
 * optimizer's state and the activations one step keeps for its backward pass (counted from the ops the
 * models submit). Used to refuse a batch that cannot fit — with the numbers and the largest batch that
 * does — instead of failing mid-step, and by the service to admit `train` jobs.
 */
import { bytesPerElement, type DType } from '../core/dtype.js';
import { TandemError, formatBytes } from '../core/errors.js';
import type { GptConfig } from './models/gpt.js';

export interface MemoryPlan {
  /** Bytes that do not depend on the batch: weights, gradients, optimizer state. */
  readonly fixed: number;
  /** Bytes per sample (image or sequence) of the batch: activations and their gradients. */
  readonly perSample: number;
}

function optimizerBytes(params: number, dtype: DType): number {
  const half = dtype === 'f16' || dtype === 'bf16';
  // weights + gradients in the working dtype; moments in f32 (f64 for f64) and an f32 master when half.
  const w = bytesPerElement(dtype);
  return params * (2 * w + (half ? 12 : 2 * w));
}

export function gptParameterCount(c: GptConfig): number {
  const C = c.width;
  return c.paddedVocab * C + c.context * C + c.layers * (12 * C * C + 13 * C) + 2 * C;
}

/** GPT: per token and layer, ~22·C activations kept (ln, qkv and its reshape, attention out and its
 * reshape, projections, residual sums, MLP pre-activation and output) plus the attention's log-sum-exp. */
export function gptMemoryPlan(c: GptConfig, dtype: DType, seqLen = c.context): MemoryPlan {
  const b = bytesPerElement(dtype);
  const C = c.width;
  const perToken = c.layers * (22 * C * b + 4 * c.heads + 8) + 2 * C * b + c.paddedVocab * b + 8;
  // The backward pass holds about two layers' worth of gradients at a time on top.
  const transient = 2 * (22 * C * b);
  return { fixed: optimizerBytes(gptParameterCount(c), dtype), perSample: seqLen * (perToken + transient) };
}

/** Classifiers: parameters counted exactly; activations from the layer widths (x2 for their gradients). */
export function classifierMemoryPlan(params: number, activationsPerImage: number, dtype: DType): MemoryPlan {
  return {
    fixed: optimizerBytes(params, dtype),
    perSample: 2 * activationsPerImage * bytesPerElement(dtype),
  };
}

export function planBytes(p: MemoryPlan, batch: number): number {
  return p.fixed + p.perSample * batch;
}

/**
 * Throws TANDEM_ERR_OUT_OF_MEMORY when `batch` does not fit in `available` bytes, naming the numbers and
 * the largest batch that fits (or that even the weights do not).
 */
export function requireFits(p: MemoryPlan, batch: number, available: number, device: string): void {
  const need = planBytes(p, batch);
  if (need <= available) return;
  const largest = Math.floor((available - p.fixed) / p.perSample);
  const hint =
    largest >= 1
      ? `the largest batch that fits is ${largest}`
      : `even the weights, gradients and optimizer state (${formatBytes(p.fixed)}) do not fit`;
  throw new TandemError(
    'TANDEM_ERR_OUT_OF_MEMORY',
    `train: batch ${batch} needs about ${formatBytes(need)} on ${device}, which has ${formatBytes(available)}; ${hint}`,
    { needBytes: need, availableBytes: available, batch, largestBatch: Math.max(0, largest) },
  );
}
