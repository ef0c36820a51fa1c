/**
 * Host <-> WebGPU copies through staging buffers. Host replicas are SharedArrayBuffers, which Dawn's
 * queue.writeBuffer refuses, so uploads go through MAP_WRITE staging buffers (kept mapped in a pool,
 * re-mapped asynchronously after use) and downloads through MAP_READ ones. Large transfers move in
 * chunks so staging memory stays bounded. Completion comes from mapAsync / onSubmittedWorkDone
 * promises: the event loop never blocks.
 */
import { asTandemError } from '../../core/errors.js';
import type { CopyRoute, DeviceBuffer, Done, HostBuffer } from '../device.js';
import { isWebGpuBuffer, sizeClass, type WebGpuBuffer } from './memory-node.js';

const STAGING_KEPT = 4;

function round4(n: number): number {
  return Math.ceil(n / 4) * 4;
}

function isHost(b: DeviceBuffer): b is HostBuffer {
  return (b as Partial<HostBuffer>).sab instanceof SharedArrayBuffer;
}

export interface GpuFlags {
  readonly MAP_READ: number;
  readonly MAP_WRITE: number;
  readonly COPY_SRC: number;
  readonly COPY_DST: number;
  readonly READ: number;
  readonly WRITE: number;
}

export class StagingTransfers {
  private readonly writePool: GPUBuffer[] = [];
  private readonly readPool: GPUBuffer[] = [];

  constructor(
    private readonly name: string,
    private readonly device: GPUDevice,
    private readonly flags: GpuFlags,
    private readonly chunkBytes: number,
  ) {}

  private takeWrite(size: number): Promise<GPUBuffer> | GPUBuffer {
    const i = this.writePool.findIndex((b) => b.size >= size);
    if (i >= 0) return this.writePool.splice(i, 1)[0]!;
    return this.device.createBuffer({
      size: sizeClass(size),
      usage: this.flags.MAP_WRITE | this.flags.COPY_SRC,
      mappedAtCreation: true,
      label: `${this.name}.upload`,
    });
  }

  /** After the copy out of it is done, map it again for the next upload; then it is reusable. */
  private recycleWrite(b: GPUBuffer): void {
    b.mapAsync(this.flags.WRITE).then(
      () => {
        if (this.writePool.length < STAGING_KEPT) this.writePool.push(b);
        else b.destroy();
      },
      () => b.destroy(),
    );
  }

  private takeRead(size: number): GPUBuffer {
    const i = this.readPool.findIndex((b) => b.size >= size);
    if (i >= 0) return this.readPool.splice(i, 1)[0]!;
    return this.device.createBuffer({
      size: sizeClass(size),
      usage: this.flags.MAP_READ | this.flags.COPY_DST,
      label: `${this.name}.download`,
    });
  }

  private recycleRead(b: GPUBuffer): void {
    if (this.readPool.length < STAGING_KEPT) this.readPool.push(b);
    else b.destroy();
  }

  async upload(src: HostBuffer, dst: WebGpuBuffer, bytes: number): Promise<void> {
    const total = round4(bytes);
    for (let off = 0; off < total; off += this.chunkBytes) {
      const len = Math.min(this.chunkBytes, total - off);
      const staging = await this.takeWrite(len);
      const view = new Uint8Array(staging.getMappedRange(0, len));
      // The host buffer may end before the 4-byte rounding: copy what exists, the rest stays zero.
      const have = Math.max(0, Math.min(len, src.sab.byteLength - off));
      view.set(new Uint8Array(src.sab, off, have));
      if (have < len) view.fill(0, have);
      staging.unmap();
      const enc = this.device.createCommandEncoder();
      enc.copyBufferToBuffer(staging, 0, dst.gpu, off, len);
      this.device.queue.submit([enc.finish()]);
      this.recycleWrite(staging);
    }
    await this.device.queue.onSubmittedWorkDone();
  }

  async download(src: WebGpuBuffer, dst: HostBuffer, bytes: number): Promise<void> {
    const total = round4(bytes);
    for (let off = 0; off < total; off += this.chunkBytes) {
      const len = Math.min(this.chunkBytes, total - off);
      const staging = this.takeRead(len);
      const enc = this.device.createCommandEncoder();
      enc.copyBufferToBuffer(src.gpu, off, staging, 0, len);
      this.device.queue.submit([enc.finish()]);
      await staging.mapAsync(this.flags.READ, 0, len);
      const keep = Math.min(len, bytes - off, dst.sab.byteLength - off);
      new Uint8Array(dst.sab, off, keep).set(new Uint8Array(staging.getMappedRange(0, len), 0, keep));
      staging.unmap();
      this.recycleRead(staging);
    }
  }

  destroy(): void {
    for (const b of [...this.writePool, ...this.readPool]) b.destroy();
    this.writePool.length = 0;
    this.readPool.length = 0;
  }
}

/** The two routes of the copy table this backend adds: host -> webgpu and webgpu -> host. */
export function hostRoutes(
  deviceId: string,
  staging: StagingTransfers,
  alive: () => Error | null,
): CopyRoute[] {
  const run = (what: string, work: () => Promise<void>, done: Done): void => {
    const dead = alive();
    if (dead) return done(dead);
    work().then(
      () => done(null),
      (e: unknown) => done(asTandemError(e, 'TANDEM_ERR_DRIVER', `${deviceId} ${what}`)),
    );
  };
  const mismatch = (what: string): Error =>
    asTandemError(
      new Error('buffers are not of the expected kinds'),
      'TANDEM_ERR_INTERNAL',
      `${deviceId} ${what}`,
    );
  return [
    {
      from: 'host',
      to: 'webgpu',
      engine: () => `${deviceId}.h2d`,
      copy(src, dst, bytes, done) {
        if (!isHost(src) || !isWebGpuBuffer(dst)) return done(mismatch('h2d'));
        run('h2d', () => staging.upload(src, dst, bytes), done);
      },
    },
    {
      from: 'webgpu',
      to: 'host',
      engine: () => `${deviceId}.d2h`,
      copy(src, dst, bytes, done) {
        if (!isWebGpuBuffer(src) || !isHost(dst)) return done(mismatch('d2h'));
        run('d2h', () => staging.download(src, dst, bytes), done);
      },
    },
  ];
}
