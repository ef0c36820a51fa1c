/**
 * WebGPU device memory: storage buffers with a size-class pool. Sizes are rounded up to 16 bytes at
 * least, so every buffer can be bound as array<vec4<...>> and copied in 4-byte units; larger ones to
 * one of 8 classes per power of two (at most 12.5% slack) so freed buffers are reused by similar
 * requests. A request over the adapter's limits is refused before anything is created, with both
 * numbers: Dawn would otherwise fail later and asynchronously.
 */
import { TandemError, formatBytes } from '../../core/errors.js';
import type { DeviceBuffer, MemoryNode } from '../device.js';

export interface WebGpuBuffer extends DeviceBuffer {
  readonly gpu: GPUBuffer;
  /** Rounded size of the GPU buffer (>= bytes). */
  readonly capacity: number;
}

export function isWebGpuBuffer(b: DeviceBuffer): b is WebGpuBuffer {
  return (
    typeof (b as Partial<WebGpuBuffer>).capacity === 'number' &&
    (b as Partial<WebGpuBuffer>).gpu !== undefined
  );
}

export function sizeClass(bytes: number): number {
  const min = Math.max(16, bytes);
  if (min <= 4096) return Math.ceil(min / 256) * 256;
  const step = 2 ** (Math.floor(Math.log2(min)) - 3);
  return Math.ceil(min / step) * step;
}

export class WebGpuMemoryNode implements MemoryNode {
  index = -1;
  readonly kind = 'webgpu' as const;
  private readonly pool = new Map<number, GPUBuffer[]>();
  private pooledBytes = 0;
  private readonly usage: number;

  constructor(
    readonly name: string,
    readonly capacityBytes: number,
    private readonly device: GPUDevice,
    usageFlags: { STORAGE: number; COPY_SRC: number; COPY_DST: number },
    private readonly poolLimit: number,
    /** Null while the device is usable; its closing or loss error otherwise. */
    private readonly failure: () => Error | null,
  ) {
    this.usage = usageFlags.STORAGE | usageFlags.COPY_SRC | usageFlags.COPY_DST;
  }

  /** The largest buffer a kernel can bind: a storage binding is capped separately from the buffer. */
  get maxBufferBytes(): { bytes: number; limit: string } {
    const l = this.device.limits;
    return l.maxStorageBufferBindingSize < l.maxBufferSize
      ? { bytes: l.maxStorageBufferBindingSize, limit: 'maxStorageBufferBindingSize' }
      : { bytes: l.maxBufferSize, limit: 'maxBufferSize' };
  }

  alloc(bytes: number): WebGpuBuffer {
    if (!Number.isInteger(bytes) || bytes < 0) {
      throw new TandemError(
        'TANDEM_ERR_SIZE',
        `${this.name}: buffer size must be a non-negative integer, got ${bytes}`,
      );
    }
    const failed = this.failure();
    if (failed) throw failed;
    const max = this.maxBufferBytes;
    const capacity = sizeClass(bytes);
    if (capacity > max.bytes) {
      throw new TandemError(
        'TANDEM_ERR_LIMIT',
        `${this.name}: a buffer of ${bytes} bytes (${formatBytes(bytes)}) exceeds the adapter's ${max.limit} of ` +
          `${max.bytes} bytes (${formatBytes(max.bytes)})`,
        { requested: bytes, limit: max.bytes, limitName: max.limit, device: this.name },
      );
    }
    const reused = this.pool.get(capacity)?.pop();
    if (reused) {
      this.pooledBytes -= capacity;
      return { node: this, bytes, gpu: reused, capacity };
    }
    const gpu = this.device.createBuffer({
      size: capacity,
      usage: this.usage,
      label: `${this.name}:${bytes}`,
    });
    return { node: this, bytes, gpu, capacity };
  }

  free(buf: DeviceBuffer): void {
    if (!isWebGpuBuffer(buf) || buf.node !== this) return;
    // Work already queued that still uses this buffer runs first: everything goes through one queue.
    if (this.pooledBytes + buf.capacity <= this.poolLimit) {
      const list = this.pool.get(buf.capacity) ?? [];
      list.push(buf.gpu);
      this.pool.set(buf.capacity, list);
      this.pooledBytes += buf.capacity;
    } else {
      buf.gpu.destroy();
    }
  }

  trim(): number {
    const released = this.pooledBytes;
    for (const list of this.pool.values()) for (const b of list) b.destroy();
    this.pool.clear();
    this.pooledBytes = 0;
    return released;
  }
}
