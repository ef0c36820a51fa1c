/**
 * Copies between GPUs. Peer access is enabled for every ordered pair the driver allows
 * (cuDeviceCanAccessPeer → cuCtxEnablePeerAccess), and copies then go GPU to GPU with
 * cuMemcpyPeerAsync (over NVLink where present). Where it is not allowed, or when the `peerAccess`
 * option is false, a copy is staged through two pinned host chunks: device → host on the source's d2h
 * stream, host → device on the destination's h2d stream, the two halves overlapping chunk by chunk.
 * A copy within one GPU stays a device-to-device copy on its compute stream (copyWithin).
 * Each copy runs on the source GPU's d2h stream, so the two directions of a pair run at once.
 */
import { TandemError } from '../../core/errors.js';
import type { Done } from '../device.js';
import type { CudaDevice } from './cuda-device.js';
import { CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, type CudaDriver } from './ffi/driver.js';
import type { CudaBuffer } from './memory-node.js';

export type PeerPath = 'same' | 'peer' | 'staged';

/** Staging chunk: large enough to run at PCIe speed, small enough that both halves overlap. */
export const STAGING_CHUNK = 32 << 20;
const CU_MEMHOSTALLOC_PORTABLE = 1;

/**
 * Which path a copy between device indices takes: one GPU → 'same'; peer access either way → 'peer'
 * (cuMemcpyPeerAsync needs access enabled by one side to go direct); otherwise 'staged'.
 */
export function peerPath(
  src: number,
  dst: number,
  access: readonly (readonly boolean[])[],
  force?: PeerPath,
): PeerPath {
  if (src === dst) return force === 'staged' || force === 'peer' ? force : 'same';
  if (force === 'staged') return 'staged';
  return access[src]?.[dst] === true || access[dst]?.[src] === true ? 'peer' : 'staged';
}

export interface PeerOptions {
  /** false: never enable peer access; every copy between GPUs is staged (tests, comparison). */
  readonly peerAccess: boolean;
  readonly log?: (m: string) => void;
}

interface Staging {
  readonly ptrs: readonly [number, number];
  readonly epoch: number;
  busy: boolean;
  readonly waiting: (() => void)[];
}

export class PeerLinks {
  /** access[i][j]: device i can read and write device j's memory directly. */
  readonly access: boolean[][];
  /** Why a pair has no peer access ("i>j: reason"), for logs and benchmarks. */
  readonly notes: string[] = [];
  private readonly staging = new Map<CudaDevice, Staging>();

  constructor(
    readonly devices: readonly CudaDevice[],
    private readonly driver: CudaDriver,
    private readonly opts: PeerOptions,
  ) {
    this.access = devices.map(() => devices.map(() => false));
    if (opts.peerAccess) this.enable();
    else if (devices.length > 1) this.notes.push('peer access off by option: copies between GPUs are staged');
    devices.forEach((d, i) => {
      if (this.access[i]!.some((x) => x)) d.caps = { ...d.caps, peerCopy: true };
    });
  }

  private enable(): void {
    const d = this.driver;
    this.devices.forEach((a, i) =>
      this.devices.forEach((b, j) => {
        if (i === j) return;
        const can: [number] = [0];
        let rc = d.api.cuDeviceCanAccessPeer(can, a.context.ordinal, b.context.ordinal);
        if (rc !== 0 || can[0] === 0) {
          this.notes.push(
            `${a.id}>${b.id}: ${rc !== 0 ? d.describe(rc) : 'the driver reports no peer access'}`,
          );
          return;
        }
        a.context.makeCurrent();
        rc = d.api.cuCtxEnablePeerAccess(b.context.ctx, 0);
        if (rc === 0 || rc === CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) this.access[i]![j] = true;
        else this.notes.push(`${a.id}>${b.id}: cuCtxEnablePeerAccess failed: ${d.describe(rc)}`);
      }),
    );
    for (const n of this.notes) this.opts.log?.(`cuda peer: ${n}`);
  }

  path(a: CudaDevice, b: CudaDevice, force?: PeerPath): PeerPath {
    return peerPath(this.devices.indexOf(a), this.devices.indexOf(b), this.access, force);
  }

  /** Copies `bytes` from `src` on `a` to `dst` on `b` by the path `path(a, b, force)` picks. */
  copy(
    a: CudaDevice,
    src: CudaBuffer,
    b: CudaDevice,
    dst: CudaBuffer,
    bytes: number,
    done: Done,
    force?: PeerPath,
  ): void {
    if (a.node.isLost(src) || b.node.isLost(dst)) {
      queueMicrotask(() =>
        done(new TandemError('TANDEM_ERR_DATA_LOST', `${a.id}>${b.id}: a buffer was lost in a device reset`)),
      );
      return;
    }
    const path = this.path(a, b, force);
    if (path === 'same') return a.copyWithin(src, dst, bytes, done);
    try {
      if (path === 'peer') this.peer(a, src, b, dst, bytes, done);
      else this.staged(a, src, b, dst, bytes, done);
    } catch (e) {
      queueMicrotask(() => done(e instanceof Error ? e : new Error(String(e))));
    }
  }

  private peer(
    a: CudaDevice,
    src: CudaBuffer,
    b: CudaDevice,
    dst: CudaBuffer,
    bytes: number,
    done: Done,
  ): void {
    const ctx = a.context;
    ctx.makeCurrent();
    const stream = ctx.streams.d2h;
    if (bytes > 0)
      ctx.driver.check(
        ctx.driver.api.cuMemcpyPeerAsync(dst.ptr, b.context.ctx, src.ptr, ctx.ctx, bytes, stream),
        'cuMemcpyPeerAsync',
      );
    a.poller.watch(stream, done);
  }

  /** Two pinned chunks per source GPU (portable: usable from every context); one staged copy at a time. */
  private stagingOf(a: CudaDevice): Staging {
    const cur = this.staging.get(a);
    if (cur && cur.epoch === a.node.epoch) return cur; // a reset freed the old context's pinned memory
    const d = a.context.driver;
    a.context.makeCurrent();
    const alloc = (): number =>
      d.out1('cuMemHostAlloc(peer staging)', (o) =>
        d.api.cuMemHostAlloc(o, STAGING_CHUNK, CU_MEMHOSTALLOC_PORTABLE),
      );
    const s: Staging = { ptrs: [alloc(), alloc()], epoch: a.node.epoch, busy: false, waiting: [] };
    this.staging.set(a, s);
    return s;
  }

  private staged(
    a: CudaDevice,
    src: CudaBuffer,
    b: CudaDevice,
    dst: CudaBuffer,
    bytes: number,
    done: Done,
  ): void {
    const st = this.stagingOf(a);
    if (st.busy) {
      st.waiting.push(() => this.staged(a, src, b, dst, bytes, done));
      return;
    }
    st.busy = true;
    const chunks = Math.ceil(bytes / STAGING_CHUNK);
    const slotBusy = [false, false];
    let next = 0;
    let finished = 0;
    let inflight = 0;
    let d2hActive = false;
    let failed: Error | null = null;
    const release = (): void => {
      st.busy = false;
      st.waiting.shift()?.();
    };
    const settle = (): void => {
      if (failed) {
        if (inflight === 0) {
          release();
          done(failed);
        }
        return;
      }
      if (finished === chunks) {
        release();
        done(null);
        return;
      }
      pump();
    };
    const fail = (e: unknown): void => {
      failed ??= e instanceof Error ? e : new Error(String(e));
    };
    const pump = (): void => {
      while (!failed && !d2hActive && next < chunks && !slotBusy[next % 2]) {
        const i = next++;
        const slot = i % 2;
        const off = i * STAGING_CHUNK;
        const len = Math.min(STAGING_CHUNK, bytes - off);
        const host = st.ptrs[slot]!;
        slotBusy[slot] = true;
        d2hActive = true;
        inflight++;
        try {
          a.context.makeCurrent();
          a.context.driver.check(
            a.context.driver.api.cuMemcpyAsync(host, src.ptr + off, len, a.context.streams.d2h),
            'cuMemcpyAsync(peer staging d2h)',
          );
        } catch (e) {
          inflight--;
          fail(e);
          return settle();
        }
        a.poller.watch(a.context.streams.d2h, (err) => {
          d2hActive = false;
          if (err || failed) {
            inflight--;
            if (err) fail(err);
            return settle();
          }
          try {
            b.context.makeCurrent();
            b.context.driver.check(
              b.context.driver.api.cuMemcpyAsync(dst.ptr + off, host, len, b.context.streams.h2d),
              'cuMemcpyAsync(peer staging h2d)',
            );
          } catch (e) {
            inflight--;
            fail(e);
            return settle();
          }
          b.poller.watch(b.context.streams.h2d, (err2) => {
            inflight--;
            slotBusy[slot] = false;
            if (err2) fail(err2);
            else finished++;
            settle();
          });
          pump(); // the next chunk's d2h overlaps this chunk's h2d
        });
      }
    };
    if (chunks === 0) {
      release();
      queueMicrotask(() => done(null));
      return;
    }
    pump();
  }

  /** Frees the pinned staging chunks (the devices' contexts must still be open). */
  close(): void {
    for (const [a, s] of this.staging) {
      if (s.epoch !== a.node.epoch) continue;
      a.context.makeCurrent();
      for (const p of s.ptrs) a.context.driver.api.cuMemFreeHost(p);
    }
    this.staging.clear();
  }
}
