/**
 * Host <-> device copies that never block the event loop and run at PCIe speed. Host tensors live in
 * SharedArrayBuffers; a large one is page-locked in place with cuMemHostRegister the first time it meets
 * the GPU (cached per SAB, unregistered when the SAB is collected), so cuMemcpyAsync reads it directly.
 * Small copies, and large ones whose registration failed, go through a pool of pinned staging chunks
 * (cuMemHostAlloc) with a JS memcpy on the host side.
 *
 * Eager read-back: a program that declares `readback` (small results the host reads next, such as the
 * Monte Carlo partial sums) gets those outputs copied into a pinned slot on its own stream right after
 * the kernel, covered by the same completion event. A download of that buffer then costs a host memcpy
 * and no second GPU round trip. Entries are keyed by buffer object (a new one per allocation), used
 * once, and dropped when the buffer is written again (launch, upload, device copy) or the slot is needed.
 */
import { CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, addressOf, type CudaDriver } from './ffi/driver.js';
import type { Completion, CompletionPoller } from './completion.js';

/** Below this, a memcpy into staging is cheaper than page-locking the SAB. */
const REGISTER_MIN_BYTES = 1 << 20;
const STAGING_CHUNK = 8 << 20;
const STAGING_MAX_CHUNKS = 8;
const CU_MEMHOSTREGISTER_PORTABLE = 1;
const CU_MEMHOSTALLOC_PORTABLE = 1;
/** Eager read-back: outputs up to this size, in this many pinned slots. */
export const EAGER_MAX_BYTES = 64 << 10;
const EAGER_SLOTS = 16;

export interface Eager {
  readonly slot: number;
  readonly bytes: number;
  /** The copy's completion event has been seen (eagerDone). */
  ready: boolean;
  /** Dropped while its copy was in flight: the slot comes back at eagerDone. */
  dropped: boolean;
  /** Which pinned arena the slot belongs to (a reset makes a new one). */
  readonly arena: number;
}

interface Registration {
  readonly ok: boolean;
  readonly addr: number;
  readonly reason?: string;
}

interface Chunk {
  readonly ptr: number;
  readonly view: Uint8Array;
}

export interface TransferStats {
  registered: number;
  registerFailures: number;
  lastRegisterFailure?: string;
  stagedBytes: number;
  directBytes: number;
  /** Downloads served from an eager read-back slot. */
  eagerHits: number;
}

export class HostTransfers {
  private registrations = new WeakMap<SharedArrayBuffer, Registration>();
  /** Live page-locked ranges by address; the token tells a late finaliser from a newer registration. */
  private live = new Map<number, { bytes: number; ref: WeakRef<SharedArrayBuffer>; token: object }>();
  private readonly finaliser = new FinalizationRegistry<{ addr: number; token: object }>(
    ({ addr, token }) => {
      if (this.live.get(addr)?.token !== token) return;
      this.live.delete(addr);
      this.makeCurrent();
      this.driver.api.cuMemHostUnregister(addr);
    },
  );
  private chunks: Chunk[] = [];
  private freeChunks: Chunk[] = [];
  private readonly waiting: ((c: Chunk) => void)[] = [];
  readonly stats: TransferStats = {
    registered: 0,
    registerFailures: 0,
    stagedBytes: 0,
    directBytes: 0,
    eagerHits: 0,
  };
  private eagerArena: Chunk | null = null;
  private eagerFree: number[] = [];
  private arenaGen = 0;
  /** Insertion order is age order: the oldest ready entry is evicted when no slot is free. */
  private eager = new Map<object, Eager>();

  constructor(
    private readonly driver: CudaDriver,
    private readonly poller: CompletionPoller,
    private readonly makeCurrent: () => void,
    private readonly view: (ptr: number, bytes: number) => Uint8Array,
    /** false: never register SABs (forced staging, for tests and comparison). */
    private readonly registerSabs: boolean,
  ) {}

  upload(sab: SharedArrayBuffer, dst: number, bytes: number, stream: number, done: Completion): void {
    this.copy('h2d', sab, dst, bytes, stream, done);
  }

  download(src: number, sab: SharedArrayBuffer, bytes: number, stream: number, done: Completion): void {
    this.copy('d2h', sab, src, bytes, stream, done);
  }

  private copy(
    dir: 'h2d' | 'd2h',
    sab: SharedArrayBuffer,
    dev: number,
    bytes: number,
    stream: number,
    done: Completion,
  ): void {
    if (bytes === 0) {
      queueMicrotask(() => done(null));
      return;
    }
    this.makeCurrent();
    const reg = bytes >= REGISTER_MIN_BYTES && this.registerSabs ? this.registration(sab) : null;
    if (reg?.ok) {
      const rc =
        dir === 'h2d'
          ? this.driver.api.cuMemcpyAsync(dev, reg.addr, bytes, stream)
          : this.driver.api.cuMemcpyAsync(reg.addr, dev, bytes, stream);
      if (rc !== 0) {
        const err = this.driver.error(rc, `cuMemcpyAsync(${dir})`);
        queueMicrotask(() => done(err));
        return;
      }
      this.stats.directBytes += bytes;
      // The closure keeps the SAB reachable until the copy has finished: DMA is using its memory.
      this.poller.watch(stream, (err) => {
        if (sab.byteLength >= 0) done(err);
      });
      return;
    }
    this.staged(dir, sab, dev, bytes, stream, done);
  }

  /** Chunked copy through pinned staging memory; chunks are reused as soon as their copy completes. */
  private staged(
    dir: 'h2d' | 'd2h',
    sab: SharedArrayBuffer,
    dev: number,
    bytes: number,
    stream: number,
    done: Completion,
  ): void {
    const host = new Uint8Array(sab, 0, bytes);
    let next = 0;
    let outstanding = 0;
    let failed: Error | null = null;
    let finished = false;
    const finish = (): void => {
      if (!finished && outstanding === 0 && (next >= bytes || failed)) {
        finished = true;
        done(failed);
      }
    };
    const issue = (chunk: Chunk): void => {
      if (failed || next >= bytes) {
        this.releaseChunk(chunk);
        finish();
        return;
      }
      const off = next;
      const len = Math.min(STAGING_CHUNK, bytes - off);
      next += len;
      this.makeCurrent();
      if (dir === 'h2d') chunk.view.set(host.subarray(off, off + len));
      const rc =
        dir === 'h2d'
          ? this.driver.api.cuMemcpyAsync(dev + off, chunk.ptr, len, stream)
          : this.driver.api.cuMemcpyAsync(chunk.ptr, dev + off, len, stream);
      if (rc !== 0) {
        failed = this.driver.error(rc, `cuMemcpyAsync(${dir}, staged)`);
        this.releaseChunk(chunk);
        finish();
        return;
      }
      outstanding++;
      this.stats.stagedBytes += len;
      this.poller.watch(stream, (err) => {
        outstanding--;
        if (err) failed = err;
        else if (dir === 'd2h') host.set(chunk.view.subarray(0, len), off);
        if (next < bytes && !failed) issue(chunk);
        else {
          this.releaseChunk(chunk);
          finish();
        }
      });
      // Ask for another chunk while this one is in flight, so copies pipeline with the host memcpy.
      if (next < bytes) this.acquireChunk(issue);
    };
    this.acquireChunk(issue);
  }

  private acquireChunk(use: (c: Chunk) => void): void {
    const free = this.freeChunks.pop();
    if (free) return use(free);
    if (this.chunks.length < STAGING_MAX_CHUNKS) {
      let chunk: Chunk;
      try {
        const ptr = this.driver.out1('cuMemHostAlloc', (o) =>
          this.driver.api.cuMemHostAlloc(o, STAGING_CHUNK, CU_MEMHOSTALLOC_PORTABLE),
        );
        chunk = { ptr, view: this.view(ptr, STAGING_CHUNK) };
      } catch {
        this.waiting.push(use);
        return;
      }
      this.chunks.push(chunk);
      return use(chunk);
    }
    this.waiting.push(use);
  }

  private releaseChunk(chunk: Chunk): void {
    const w = this.waiting.shift();
    if (w) w(chunk);
    else this.freeChunks.push(chunk);
  }

  /**
   * Enqueues on `stream` (after the work just launched there) a copy of `bytes` at device address `src`
   * into a pinned slot, remembered under `key`. Returns the entry, to hand to eagerDone once the stream's
   * completion event covering the copy has been seen, or null when it is not worth it or no slot is
   * free; errors leave things as they were (the normal download path still works).
   */
  stageEager(key: object, src: number, bytes: number, stream: number): Eager | null {
    if (bytes === 0 || bytes > EAGER_MAX_BYTES) return null;
    this.dropEager(key);
    const slot = this.takeEagerSlot();
    if (slot < 0) return null;
    this.makeCurrent();
    const rc = this.driver.api.cuMemcpyAsync(this.eagerArena!.ptr + slot, src, bytes, stream);
    if (rc !== 0) {
      this.eagerFree.push(slot);
      return null;
    }
    const e: Eager = { slot, bytes, ready: false, dropped: false, arena: this.arenaGen };
    this.eager.set(key, e);
    return e;
  }

  /** Forgets the eager copy of `key` (it is being written again, or its copy failed). */
  dropEager(key: object): void {
    const e = this.eager.get(key);
    if (!e) return;
    this.eager.delete(key);
    // A slot whose copy is still in flight comes back when the copy has finished.
    if (e.ready) this.eagerFree.push(e.slot);
    else e.dropped = true;
  }

  /** The completion event covering an eager copy was seen (ok) or the work failed. */
  eagerDone(key: object, e: Eager, ok: boolean): void {
    if (ok && !e.dropped) {
      e.ready = true;
      return;
    }
    if (this.eager.get(key) === e) this.eager.delete(key);
    // After a reset the arena died with the context (forgetAll): its slots are not given back.
    if (e.arena === this.arenaGen) this.eagerFree.push(e.slot);
  }

  /** Serves a download from a completed eager copy: true when `sab` now holds the bytes. */
  takeEager(key: object, sab: SharedArrayBuffer, bytes: number): boolean {
    if (this.eager.size === 0) return false;
    const e = this.eager.get(key);
    if (!e || !e.ready || bytes > e.bytes) return false;
    new Uint8Array(sab, 0, bytes).set(this.eagerArena!.view.subarray(e.slot, e.slot + bytes));
    this.eager.delete(key);
    this.eagerFree.push(e.slot);
    this.stats.eagerHits++;
    return true;
  }

  private takeEagerSlot(): number {
    if (!this.eagerArena) {
      try {
        const bytes = EAGER_MAX_BYTES * EAGER_SLOTS;
        const ptr = this.driver.out1('cuMemHostAlloc', (o) =>
          this.driver.api.cuMemHostAlloc(o, bytes, CU_MEMHOSTALLOC_PORTABLE),
        );
        this.eagerArena = { ptr, view: this.view(ptr, bytes) };
        for (let i = EAGER_SLOTS - 1; i >= 0; i--) this.eagerFree.push(i * EAGER_MAX_BYTES);
      } catch {
        return -1;
      }
    }
    const free = this.eagerFree.pop();
    if (free !== undefined) return free;
    // Evict the oldest entry whose copy has finished (results nobody read).
    for (const [key, e] of this.eager) {
      if (!e.ready) continue;
      this.eager.delete(key);
      return e.slot;
    }
    return -1;
  }

  private registration(sab: SharedArrayBuffer): Registration {
    const known = this.registrations.get(sab);
    if (known) return known;
    const addr = addressOf(new Uint8Array(sab));
    const bytes = sab.byteLength;
    let rc = this.driver.api.cuMemHostRegister_v2(addr, bytes, CU_MEMHOSTREGISTER_PORTABLE);
    if (rc === CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED && this.dropDeadOverlaps(addr, bytes)) {
      rc = this.driver.api.cuMemHostRegister_v2(addr, bytes, CU_MEMHOSTREGISTER_PORTABLE);
    }
    let reg: Registration;
    if (rc === 0) {
      reg = { ok: true, addr };
      this.stats.registered++;
      const token = {};
      this.live.set(addr, { bytes, ref: new WeakRef(sab), token });
      this.finaliser.register(sab, { addr, token }, token);
    } else {
      reg = { ok: false, addr, reason: `cuMemHostRegister_v2 failed: ${this.driver.describe(rc)}` };
      this.stats.registerFailures++;
      this.stats.lastRegisterFailure = reg.reason;
    }
    this.registrations.set(sab, reg);
    return reg;
  }

  /**
   * A collected SAB whose finaliser has not run yet still pins its range, and malloc may already have
   * handed part of it to a new SAB: unregister such dead ranges that overlap [addr, addr + bytes).
   */
  private dropDeadOverlaps(addr: number, bytes: number): boolean {
    return this.dropDead((start, size) => start < addr + bytes && start + size > addr) > 0;
  }

  /**
   * Unregisters every range whose SAB was collected but not yet finalised. The freed pages may be
   * mapped again by anyone, the driver included: when it grows its own address reservation over such a
   * range, cuMemAlloc fails with CUDA_ERROR_ALREADY_MAPPED (seen on an H100 when a large SAB's
   * allocation set off a GC just before a device allocation). Returns how many ranges it dropped.
   */
  reclaimDeadRanges(): number {
    return this.dropDead(() => true);
  }

  private dropDead(matches: (start: number, bytes: number) => boolean): number {
    let dropped = 0;
    for (const [start, r] of this.live) {
      if (r.ref.deref() !== undefined || !matches(start, r.bytes)) continue;
      this.makeCurrent();
      this.driver.api.cuMemHostUnregister(start);
      this.finaliser.unregister(r.token);
      this.live.delete(start);
      dropped++;
    }
    return dropped;
  }

  /** The host node freed this SAB: stop pinning it now rather than when it is collected. */
  release(sab: SharedArrayBuffer): void {
    const reg = this.registrations.get(sab);
    this.registrations.delete(sab);
    if (!reg?.ok) return;
    const r = this.live.get(reg.addr);
    if (!r || r.ref.deref() !== sab) return;
    this.live.delete(reg.addr);
    this.finaliser.unregister(r.token);
    this.makeCurrent();
    this.driver.api.cuMemHostUnregister(reg.addr);
  }

  /** After a context reset: registrations and staging memory died with the context. */
  forgetAll(): void {
    this.registrations = new WeakMap();
    for (const r of this.live.values()) this.finaliser.unregister(r.token);
    this.live = new Map();
    this.chunks = [];
    this.freeChunks = [];
    this.eagerArena = null;
    this.eagerFree = [];
    this.eager = new Map();
    this.arenaGen++;
  }

  /** Frees staging memory (registrations end when their SABs are collected). */
  close(): void {
    this.makeCurrent();
    for (const c of this.chunks) this.driver.api.cuMemFreeHost(c.ptr);
    if (this.eagerArena) this.driver.api.cuMemFreeHost(this.eagerArena.ptr);
    this.chunks = [];
    this.freeChunks = [];
    this.eagerArena = null;
    this.eagerFree = [];
    this.eager = new Map();
    this.arenaGen++;
  }
}
