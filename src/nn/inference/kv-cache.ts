/**
 * The key/value cache of GPT generation: per layer one key and one value tensor [S, P, C] (S sequence
 * slots of P positions, the model's dtype), filled by `kv_append` and read by `kv_attention`. A slot
 * belongs to one live sequence; `acquire`/`release` hand slots out, so a finished or aborted sequence's
 * memory is reused by the next one without any allocation (the positions past a sequence's length are
 * never read: every row attends only up to its own position).
 */
import { bytesPerElement, type DType } from '../../core/dtype.js';
import { TandemError } from '../../core/errors.js';
import type { Tensor } from '../../memory/tensor.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { GptConfig } from '../models/gpt.js';

export interface KvCacheOptions {
  /** Sequences held at once. */
  readonly slots: number;
  /** Positions per slot (the longest prompt + generation); at most the model's context. */
  readonly positions: number;
}

let nextCacheId = 1;

export class KvCache {
  /** Names the cache in the kept decode plans over it (GptInference). */
  readonly id = nextCacheId++;
  readonly keys: readonly Tensor[];
  readonly values: readonly Tensor[];
  readonly slots: number;
  readonly positions: number;
  private readonly free: number[];
  private closed = false;

  constructor(
    private readonly rt: Pick<Runtime, 'tensor' | 'free'>,
    config: GptConfig,
    readonly dtype: DType,
    options: KvCacheOptions,
  ) {
    const { slots, positions } = options;
    if (!Number.isInteger(slots) || slots < 1)
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `kv cache: slots must be a positive integer, got ${slots}`,
      );
    if (!Number.isInteger(positions) || positions < 1 || positions > config.context)
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `kv cache: positions must be an integer in [1, ${config.context}] (the context), got ${positions}`,
      );
    this.slots = slots;
    this.positions = positions;
    const shape = [slots, positions, config.width];
    this.keys = Array.from({ length: config.layers }, () => rt.tensor(shape, dtype));
    this.values = Array.from({ length: config.layers }, () => rt.tensor(shape, dtype));
    // Lowest slot first: pop() takes from the end.
    this.free = Array.from({ length: slots }, (_, i) => slots - 1 - i);
  }

  /** Bytes of device memory the cache holds. */
  static bytes(config: GptConfig, dtype: DType, options: KvCacheOptions): number {
    return 2 * config.layers * options.slots * options.positions * config.width * bytesPerElement(dtype);
  }

  get bytes(): number {
    return (
      2 *
      this.keys.length *
      this.slots *
      this.positions *
      this.keys[0]!.shape[2]! *
      bytesPerElement(this.dtype)
    );
  }

  get freeSlots(): number {
    return this.free.length;
  }

  /** A free slot, or null when every slot holds a live sequence. */
  acquire(): number | null {
    return this.free.pop() ?? null;
  }

  release(slot: number): void {
    if (!Number.isInteger(slot) || slot < 0 || slot >= this.slots || this.free.includes(slot))
      throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `kv cache: slot ${slot} is not held`);
    this.free.push(slot);
  }

  dispose(): void {
    if (this.closed) return;
    this.closed = true;
    for (const t of [...this.keys, ...this.values]) this.rt.free(t);
  }
}
