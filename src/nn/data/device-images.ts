/**
 * A training set kept on the device, for GPU runs of the image classifiers: the images go up once as a
 * [count, H·W] table in the working dtype, and each step gathers its batch there by index, with the
 * embedding kernel and a zero position row (y[b] = table[ids[b]] + 0: exact in every dtype). A step then
 * sends the device 4 bytes per image instead of its pixels, and the host does no per-step pixel copy or
 * dtype conversion — at batch 512 on Fashion-MNIST those took a few milliseconds of host time per step,
 * more than the step's GPU work. Same batches and same values as imageBatch on the host.
 */
import type { Nn } from '../context.js';
import { reshape } from '../ops/elementwise.js';
import { embedding } from '../ops/embedding.js';
import type { Var } from '../var.js';
import { type ImageSet, imageBatchIndices } from './images.js';

export interface DeviceBatch {
  /** The images: [batch, H·W] when `flat`, else [batch, 1, H, W]. */
  readonly x: Var;
  /** The labels, i32 [batch]. */
  readonly y: Var;
  /** Inputs made for this step, to free once its work is queued. */
  readonly inputs: readonly Var[];
}

export class DeviceImages {
  private readonly table: Var;
  private readonly zero: Var;

  constructor(
    readonly nn: Nn,
    readonly set: ImageSet,
  ) {
    const px = set.height * set.width;
    this.table = nn.input(set.images, [set.count, px]);
    this.zero = nn.input(new Float32Array(px), [1, px]);
    // Gather one row now, so the table's upload happens here rather than inside the first step.
    const probe = nn.input(new Int32Array(1), [1, 1], 'i32');
    const row = nn.noGrad(() => embedding(nn, probe, this.table, this.zero));
    nn.free(row.data);
    nn.free(probe.data);
  }

  /** imageBatch's batch `index` (same seeded shuffle), gathered on the device. */
  batch(batch: number, index: number, seed: number, flat: boolean): DeviceBatch {
    const nn = this.nn;
    const { indices, labels } = this.indices(batch, index, seed);
    const ids = nn.input(indices, [batch, 1], 'i32');
    const y = nn.input(labels, [batch], 'i32');
    return { x: this.gather(ids, flat), y, inputs: [ids, y] };
  }

  /** The image indices (i32, as [batch, 1]) and labels (i32 [batch]) of imageBatch's batch `index`. */
  indices(batch: number, index: number, seed: number): { indices: Int32Array; labels: Int32Array } {
    const set = this.set;
    const indices = imageBatchIndices(set.count, batch, index, seed);
    return { indices, labels: Int32Array.from(indices, (j) => set.labels[j]!) };
  }

  /** The images at `ids` (i32 [batch, 1]) gathered on the device: [batch, H·W] when `flat`, else NCHW. */
  gather(ids: Var, flat: boolean): Var {
    const set = this.set;
    const rows = embedding(this.nn, ids, this.table, this.zero);
    return flat ? rows : reshape(this.nn, rows, [ids.shape[0]!, 1, set.height, set.width]);
  }

  /** Frees the table (the set is not used after this). */
  dispose(): void {
    for (const v of [this.table, this.zero]) if (!v.data.freed) this.nn.free(v.data);
  }
}
