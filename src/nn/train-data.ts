/**
 * What the training loop takes in: a step's inputs as host arrays, batches of rows, and the data a
 * Trainer draws them from (split from train.ts).
 */
import type { DType } from '../core/dtype.js';
import type { ImageSet } from './data/images.js';
import type { Var } from './var.js';

/** One input tensor of a step as host data. */
export interface HostInput {
  readonly values: ArrayLike<number>;
  readonly shape: readonly number[];
  readonly dtype: DType;
}

/** A step's inputs as host arrays, and the loss the model makes from them once they are tensors. */
export interface StepInputs {
  readonly arrays: readonly HostInput[];
  readonly loss: (inputs: readonly Var[]) => Var;
}

/** One batch of rows as host arrays (row-major: a row is a sequence or an image). */
export type Batch =
  | {
      readonly kind: 'tokens';
      readonly rows: number;
      readonly time: number;
      readonly inputs: Int32Array;
      readonly targets: Int32Array;
    }
  | {
      readonly kind: 'images';
      readonly rows: number;
      readonly height: number;
      readonly width: number;
      readonly images: Float32Array;
      readonly labels: Int32Array;
    };

/** Rank `rank`'s equal share of `b`'s rows, in order (the caller checked that ranks divides rows). */
export function shardBatch(b: Batch, rank: number, ranks: number): Batch {
  const rows = b.rows / ranks;
  const from = rank * rows;
  if (b.kind === 'tokens') {
    const t = b.time;
    return {
      ...b,
      rows,
      inputs: b.inputs.subarray(from * t, (from + rows) * t),
      targets: b.targets.subarray(from * t, (from + rows) * t),
    };
  }
  const px = b.height * b.width;
  return {
    ...b,
    rows,
    images: b.images.subarray(from * px, (from + rows) * px),
    labels: b.labels.subarray(from, from + rows),
  };
}

export type TrainData =
  | { readonly kind: 'images'; readonly train: ImageSet; readonly test?: ImageSet }
  | { readonly kind: 'tokens'; readonly train: ArrayLike<number>; readonly val?: ArrayLike<number> };
