/**
 * Caching device allocator: cuMemAlloc/cuMemFree synchronise the device and cost tens of microseconds,
 * so freed blocks are kept per size class and handed out again. Small requests round up to 512 B, large
 * ones to 2 MiB (the driver's own granularity), which keeps the number of classes small and reuse high.
 * On out-of-memory the cache is released and the allocation retried once before failing with the
 * requested, free and total bytes.
 */
import { TandemError, formatBytes } from '../../core/errors.js';

/** The raw device memory calls, injected so the policy can be tested without a GPU. */
export interface RawDeviceMemory {
  /** Returns a device address, or null when the device is out of memory; throws on other failures. */
  alloc(bytes: number): number | null;
  free(ptr: number): void;
  info(): { free: number; total: number };
}

export interface AllocatorStats {
  /** Bytes handed out and not yet released. */
  inUse: number;
  /** Bytes held in the cache for reuse. */
  cached: number;
  /** Highest inUse + cached seen. */
  peakReserved: number;
  hits: number;
  misses: number;
  trims: number;
}

const SMALL_LIMIT = 1 << 20;
const SMALL_ROUND = 512;
const LARGE_ROUND = 2 << 20;

export function sizeClass(bytes: number): number {
  const b = Math.max(bytes, 1);
  const round = b <= SMALL_LIMIT ? SMALL_ROUND : LARGE_ROUND;
  return Math.ceil(b / round) * round;
}

export class CachingAllocator {
  private readonly free = new Map<number, number[]>();
  readonly stats: AllocatorStats = { inUse: 0, cached: 0, peakReserved: 0, hits: 0, misses: 0, trims: 0 };

  constructor(
    private readonly raw: RawDeviceMemory,
    private readonly name: string,
  ) {}

  /** Returns { ptr, size } where size is the class actually reserved. */
  alloc(bytes: number): { ptr: number; size: number } {
    const size = sizeClass(bytes);
    const list = this.free.get(size);
    const reused = list?.pop();
    if (reused !== undefined) {
      this.stats.hits++;
      this.stats.cached -= size;
      this.stats.inUse += size;
      return { ptr: reused, size };
    }
    this.stats.misses++;
    let ptr = this.raw.alloc(size);
    if (ptr === null && this.stats.cached > 0) {
      this.trim();
      ptr = this.raw.alloc(size);
    }
    if (ptr === null) {
      const { free, total } = this.raw.info();
      throw new TandemError(
        'TANDEM_ERR_OUT_OF_MEMORY',
        `${this.name}: cannot allocate ${formatBytes(bytes)}: ${formatBytes(free)} free of ${formatBytes(total)} (${formatBytes(this.stats.inUse)} in use by Tandem)`,
        { device: this.name, requested: bytes, free, total, inUse: this.stats.inUse },
      );
    }
    this.stats.inUse += size;
    this.stats.peakReserved = Math.max(this.stats.peakReserved, this.stats.inUse + this.stats.cached);
    return { ptr, size };
  }

  release(ptr: number, size: number): void {
    this.stats.inUse -= size;
    this.stats.cached += size;
    let list = this.free.get(size);
    if (!list) {
      list = [];
      this.free.set(size, list);
    }
    list.push(ptr);
  }

  /** Gives every cached block back to the driver; returns the bytes released. */
  trim(): number {
    const released = this.stats.cached;
    for (const list of this.free.values()) for (const ptr of list) this.raw.free(ptr);
    this.free.clear();
    this.stats.cached = 0;
    if (released > 0) this.stats.trims++;
    return released;
  }

  /** After a context reset every block is gone already: forget them without freeing. */
  forgetAll(): void {
    this.free.clear();
    this.stats.cached = 0;
    this.stats.inUse = 0;
  }
}
