/**
 * Token streams for language models: a flat array of token ids (from a uint16/uint32 little-endian
 * file, or made in memory), cut into batches of (inputs, next-token targets), at seeded random offsets
 * (training) or in order (evaluation).
 */
import { readFileSync, statSync } from 'node:fs';
import { TandemError } from '../../core/errors.js';
import { unitAt } from '../../core/seeded-random.js';

export type TokenFileDtype = 'u16' | 'u32';

export interface TokenBatch {
  /** [batch·time] input ids. */
  readonly inputs: Int32Array;
  /** [batch·time] the id after each input. */
  readonly targets: Int32Array;
}

/** Reads a token file: raw little-endian uint16 (default) or uint32 ids. */
export function readTokenFile(path: string, dtype: TokenFileDtype = 'u16'): Uint32Array | Uint16Array {
  let size: number;
  try {
    const st = statSync(path);
    if (!st.isFile())
      throw new TandemError(
        'TANDEM_ERR_BAD_DATA',
        `token file ${path} is ${st.isDirectory() ? 'a directory' : 'not a regular file'}, not a file of token ids`,
      );
    size = st.size;
  } catch (e) {
    if (e instanceof TandemError) throw e;
    throw new TandemError('TANDEM_ERR_BAD_DATA', `token file ${path} does not exist or cannot be read`);
  }
  const width = dtype === 'u16' ? 2 : 4;
  if (size % width !== 0)
    throw new TandemError(
      'TANDEM_ERR_BAD_DATA',
      `token file ${path} has ${size} bytes, not a multiple of ${width} (${dtype} ids)`,
    );
  const bytes = readFileSync(path);
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return dtype === 'u16' ? new Uint16Array(copy.buffer) : new Uint32Array(copy.buffer);
}

export interface TokenLoaderOptions {
  readonly batch: number;
  readonly time: number;
  /** Random offsets from this seed; without one, consecutive windows in order. */
  readonly seed?: number;
  /** Ids must be below this (the model's vocabulary). */
  readonly vocab?: number;
}

export class TokenLoader {
  /** Batches handed out so far (random windows are a function of it, so a resumed run continues the
   * same sequence). */
  private index = 0;

  constructor(
    readonly tokens: ArrayLike<number>,
    readonly options: TokenLoaderOptions,
  ) {
    const { batch, time } = options;
    if (!Number.isInteger(batch) || batch < 1 || !Number.isInteger(time) || time < 1)
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `tokens: batch and time must be positive integers, got ${batch} × ${time}`,
      );
    const need = batch * time + 1;
    if (tokens.length < need)
      throw new TandemError(
        'TANDEM_ERR_BAD_DATA',
        `tokens: the stream has ${tokens.length} tokens, one batch of ${batch} × ${time} needs ${need}`,
        { tokens: tokens.length, needed: need },
      );
    if (options.vocab !== undefined) {
      // Negative, fractional or NaN ids (an in-memory stream of any number type) were read as ids
      // anyway: -1 made the loss NaN, NaN became id 0.
      const vocab = options.vocab;
      for (let i = 0; i < tokens.length; i++) {
        const id = tokens[i]!;
        if (!(id >= 0 && id < vocab && Number.isInteger(id)))
          throw new TandemError(
            'TANDEM_ERR_BAD_DATA',
            `tokens: id ${id} at ${i} is outside the vocabulary of ${vocab}`,
          );
      }
    }
  }

  /** Number of in-order batches one pass over the stream gives. */
  get batchesPerEpoch(): number {
    return Math.floor((this.tokens.length - 1) / (this.options.batch * this.options.time));
  }

  /** Continues from batch `batchIndex` (resuming from a checkpoint). */
  seek(batchIndex: number): void {
    this.index = batchIndex;
  }

  get position(): number {
    return this.index;
  }

  next(): TokenBatch {
    const { batch, time } = this.options;
    const inputs = new Int32Array(batch * time);
    const targets = new Int32Array(batch * time);
    const seed = this.options.seed;
    const inOrder = this.index % this.batchesPerEpoch;
    for (let b = 0; b < batch; b++) {
      const start =
        seed === undefined
          ? (inOrder * batch + b) * time
          : Math.floor(unitAt(seed, this.index * batch + b) * (this.tokens.length - time - 1));
      for (let t = 0; t < time; t++) {
        inputs[b * time + t] = this.tokens[start + t]!;
        targets[b * time + t] = this.tokens[start + t + 1]!;
      }
    }
    this.index++;
    return { inputs, targets };
  }
}
