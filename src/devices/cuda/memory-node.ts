/**
 * The GPU's memory node. Buffers carry the context epoch they were allocated in: a fault resets the
 * context, which frees every allocation, and bumps the epoch, so `isLost(buf)` tells the memory manager
 * which replicas died (it reports TANDEM_ERR_DATA_LOST for tensors whose only valid copy was there).
 */
import { TandemError } from '../../core/errors.js';
import type { DeviceBuffer, MemoryNode } from '../device.js';
import { CachingAllocator, type AllocatorStats } from './allocator.js';
import type { CudaContext } from './context.js';
import { CUDA_ERROR_ALREADY_MAPPED, CUDA_ERROR_OUT_OF_MEMORY } from './ffi/driver.js';

export class CudaBuffer implements DeviceBuffer {
  constructor(
    readonly node: CudaMemoryNode,
    readonly bytes: number,
    readonly ptr: number,
    /** Size class actually reserved. */
    readonly reserved: number,
    readonly epoch: number,
  ) {}
}

export class CudaMemoryNode implements MemoryNode {
  index = -1;
  readonly kind = 'cuda' as const;
  /** Bumped by every context reset; buffers from an older epoch are lost. */
  epoch = 0;
  private readonly allocator: CachingAllocator;

  constructor(
    readonly name: string,
    readonly capacityBytes: number,
    private readonly context: CudaContext,
    /**
     * Unregisters host ranges whose SABs were collected but not finalised; returns how many. Their
     * pages can become the driver's next address reservation, which cuMemAlloc then finds mapped.
     */
    reclaimDeadHostRanges: () => number = () => 0,
  ) {
    const d = context.driver;
    this.allocator = new CachingAllocator(
      {
        alloc: (bytes) => {
          context.makeCurrent();
          const out: [number] = [0];
          let rc = d.api.cuMemAlloc_v2(out, bytes);
          if (rc === CUDA_ERROR_ALREADY_MAPPED && reclaimDeadHostRanges() > 0) {
            context.makeCurrent();
            rc = d.api.cuMemAlloc_v2(out, bytes);
          }
          if (rc === CUDA_ERROR_OUT_OF_MEMORY) return null;
          d.check(rc, 'cuMemAlloc_v2');
          return Number(out[0]);
        },
        free: (ptr) => {
          context.makeCurrent();
          d.check(d.api.cuMemFree_v2(ptr), 'cuMemFree_v2');
        },
        info: () => {
          context.makeCurrent();
          const free: [number] = [0];
          const total: [number] = [0];
          d.check(d.api.cuMemGetInfo_v2(free, total), 'cuMemGetInfo_v2');
          return { free: Number(free[0]), total: Number(total[0]) };
        },
      },
      name,
    );
  }

  /** Set when the GPU could not be recovered after a fault: every allocation is refused with it. */
  unusable: string | null = null;

  alloc(bytes: number): CudaBuffer {
    if (this.unusable !== null)
      throw new TandemError('TANDEM_ERR_DEVICE_UNAVAILABLE', `${this.name} is unusable: ${this.unusable}`);
    const { ptr, size } = this.allocator.alloc(bytes);
    return new CudaBuffer(this, bytes, ptr, size, this.epoch);
  }

  free(buf: DeviceBuffer): void {
    if (!(buf instanceof CudaBuffer) || buf.node !== this) return;
    // A buffer from before a reset was freed by the reset: its address may belong to a new block now.
    if (buf.epoch !== this.epoch) return;
    this.allocator.release(buf.ptr, buf.reserved);
  }

  trim(): number {
    if (this.unusable !== null) return 0;
    return this.allocator.trim();
  }

  isLost(buf: DeviceBuffer): boolean {
    return buf instanceof CudaBuffer && buf.epoch !== this.epoch;
  }

  get stats(): Readonly<AllocatorStats> {
    return this.allocator.stats;
  }

  /** Called by the device after a context reset. */
  markReset(): void {
    this.allocator.forgetAll();
    this.epoch++;
  }
}
