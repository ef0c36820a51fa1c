/**
 * Host memory: every host replica is a SharedArrayBuffer so that CPU worker threads (and the CUDA
 * backend, which page-locks it) use the very same bytes without copies.
 */
import { totalmem } from 'node:os';
import type { DeviceBuffer, HostBuffer, MemoryNode } from '../devices/device.js';

export class HostNode implements MemoryNode {
  index = 0;
  readonly kind = 'host' as const;
  readonly name = 'host';
  readonly capacityBytes: number;
  private nextId = 1;
  /** Called when a buffer is freed (CPU workers drop their reference, CUDA unregisters it). */
  readonly freeListeners: Array<(buf: HostBuffer) => void> = [];

  constructor(capacityBytes = totalmem()) {
    this.capacityBytes = capacityBytes;
  }

  alloc(bytes: number): HostBuffer {
    // Round up to 64 bytes so SIMD kernels and page-locking see aligned sizes; zero bytes still
    // get a real (empty) buffer so that every replica has one.
    const sab = new SharedArrayBuffer(Math.max(64, Math.ceil(bytes / 64) * 64));
    return { node: this, bytes, sab, id: this.nextId++ };
  }

  free(buf: DeviceBuffer): void {
    // The memory itself is garbage collected; the memory manager does the byte accounting.
    if (isHostBuffer(buf)) for (const l of this.freeListeners) l(buf);
  }
}

export function isHostBuffer(b: DeviceBuffer): b is HostBuffer {
  return (b as Partial<HostBuffer>).sab instanceof SharedArrayBuffer;
}
