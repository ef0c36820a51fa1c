/**
 * What a training run is asked for (TrainSpec) and what it reports per step, and how a spec becomes a
 * model and AdamW's settings (split from train.ts).
 */
import { TandemError } from '../core/errors.js';
import type { Nn, Precision } from './context.js';
import { Cnn, Mlp, type Classifier } from './models/classifiers.js';
import { Gpt, gptConfig, type GptConfig } from './models/gpt.js';
import type { AdamWOptions } from './optim/adamw.js';

export type ModelName = 'mlp' | 'cnn' | 'gpt';

export interface TrainSpec {
  readonly model: ModelName;
  /** GPT preset (gpt2, gpt-mini, gpt-micro, …). */
  readonly preset?: string;
  /** Changes to the GPT preset (more layers for a pipeline test, a wider toy). */
  readonly gpt?: Partial<GptConfig>;
  readonly steps: number;
  readonly batch: number;
  /** Sequence length for GPT (default: the preset's context). */
  readonly seqLen?: number;
  readonly precision?: Precision;
  readonly device?: string;
  readonly lr?: number;
  readonly warmupSteps?: number;
  readonly weightDecay?: number;
  readonly maxNorm?: number;
  readonly seed?: number;
  /** Labels for every task (the service's job id). */
  readonly tags?: Readonly<Record<string, string>>;
  /**
   * Image models: keep the training images on the device and gather each batch there (DeviceImages)
   * instead of copying its pixels from the host every step. Costs the set's size in device memory
   * (Fashion-MNIST in bf16: 94 MB) until dispose(). Default off.
   */
  readonly imagesOnDevice?: boolean;
  /**
   * Submit each pass's kernels as runtime sequences (Nn.sequences: the runtime's per-task host work
   * paid per sequence, not per kernel). Default: `sequencesByDefault`.
   */
  readonly sequences?: boolean;
  /**
   * Record the first step and replay it for every later one (StaticStep: one task per step; a CUDA graph
   * on a GPU), writing each batch into the recorded input tensors. bf16, f32 or f64 only (fp16's loss
   * scaling decides on the host every step); no dropout. Default: `staticStepByDefault`.
   */
  readonly staticStep?: boolean;
  /**
   * fp16 only: where the loss scale is decided each step — 'device' (default: amp_update, no host
   * read per step, as PyTorch's GradScaler with a fused AdamW) or 'host' (the norm is read every step).
   */
  readonly lossScaling?: 'device' | 'host';
}

/**
 * Sequence mode's default: on for a GPT on a CUDA device, where it was measured faster on the H200
 * (GPT-2 124M bf16: +13–21 % tokens/s at batch 16, +4 % at 64; bench/RESULTS.md), off otherwise: the
 * Fashion-MNIST CNN's step was 9–24 % slower with it there, and on the CPU backend a sequence would
 * serialize independent kernels that its workers run side by side.
 */
export function sequencesByDefault(model: string, device: string | undefined): boolean {
  return model === 'gpt' && device !== undefined && device.startsWith('cuda');
}

/**
 * The recorded step's default: on for the MLP and the CNN on a CUDA device outside fp16, where it was
 * measured faster on the H200 (Fashion-MNIST, batch 512, bf16: the MLP's step 0.46 vs 1.49 ms, the CNN's
 * 1.90 vs 2.54 ms; bench/RESULTS.md) and their few megabytes of activations are nothing to keep; off for a
 * GPT (its recorded step holds more memory: 34.7 vs 29.5 GiB for GPT-2 at batch 64, for 1 % more
 * throughput; `staticStep: true` asks for it) and on the CPU and WebGPU.
 */
export function staticStepByDefault(
  model: string,
  device: string | undefined,
  precision: string | undefined,
): boolean {
  return (
    (model === 'mlp' || model === 'cnn') &&
    device !== undefined &&
    device.startsWith('cuda') &&
    precision !== 'f16'
  );
}

export interface StepReport {
  readonly step: number;
  readonly loss: number;
  readonly lr: number;
  /** Samples (images or tokens) per second over the last step. */
  readonly throughput: number;
  readonly unit: 'images' | 'tokens';
  readonly stepMs: number;
  /** Model FLOP utilisation against the device's bf16/f32 peak (GPT on GPUs), when known. */
  readonly mfu: number | null;
  /** fp16: the loss scale the step used, and whether its update was skipped for an overflow. */
  readonly lossScale?: number;
  readonly skipped?: boolean;
}

export type Built =
  { readonly kind: 'classifier'; readonly model: Classifier } | { readonly kind: 'gpt'; readonly model: Gpt };

/** The pixels a classifier takes and the classes it scores. */
export function classifierShape(m: Classifier): { pixels: number; classes: number } {
  if (m instanceof Mlp) return { pixels: m.config.sizes[0]!, classes: m.config.sizes.at(-1)! };
  const c = m as Cnn;
  return { pixels: c.size * c.size, classes: c.classes };
}

export function buildModel(nn: Nn, spec: Pick<TrainSpec, 'model' | 'preset' | 'gpt'>): Built {
  switch (spec.model) {
    case 'mlp':
      return { kind: 'classifier', model: new Mlp(nn) };
    case 'cnn':
      return { kind: 'classifier', model: new Cnn(nn) };
    case 'gpt':
      return { kind: 'gpt', model: new Gpt(nn, gptConfig(spec.preset ?? 'gpt-mini', spec.gpt)) };
    default:
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `unknown model ${JSON.stringify(spec.model)}; known: mlp, cnn, gpt`,
      );
  }
}

/** The optimizer settings of a spec (GPT: nanoGPT's; classifiers: PyTorch's AdamW defaults). */
export function adamwOptions(spec: TrainSpec): AdamWOptions & { readonly lr: number } {
  const isGpt = spec.model === 'gpt';
  return {
    lr: spec.lr ?? (isGpt ? 6e-4 : 1e-3),
    beta1: 0.9,
    beta2: isGpt ? 0.95 : 0.999,
    weightDecay: spec.weightDecay ?? (isGpt ? 0.1 : 0.01),
    decayMatricesOnly: isGpt,
    maxNorm: spec.maxNorm ?? (isGpt ? 1 : 0),
  };
}
