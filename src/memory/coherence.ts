/**
 * Keeps replicas coherent. State changes happen at dispatch time in dependency order: a task's
 * predecessors have been dispatched before it, and the executor only starts a task once its data is
 * in place, so the states always describe the data as it will be when the task runs.
 */
import { TandemError } from '../core/errors.js';
import type { CopyRoute, DeviceBuffer, MemoryKind, MemoryNode } from '../devices/device.js';
import type { MemoryManager } from './memory-manager.js';
import type { Replica, Tensor } from './tensor.js';
import { nowUs } from '../core/clock.js';

export type TransferListener = (
  t: Tensor,
  from: MemoryNode,
  to: MemoryNode,
  engine: string,
  startUs: number,
  endUs: number,
) => void;

type Callback = (err: Error | null) => void;

export class Coherence {
  private readonly routes = new Map<string, CopyRoute>();
  /** The same routes by source kind, then destination kind: looked up per copy without building a key. */
  private readonly byKind = new Map<string, Map<string, CopyRoute>>();
  private clock = 0;
  onTransfer: TransferListener | null = null;
  bytesMoved = 0;
  transfers = 0;

  constructor(
    readonly memory: MemoryManager,
    readonly host: MemoryNode,
  ) {}

  addRoute(route: CopyRoute): void {
    this.routes.set(`${route.from}>${route.to}`, route);
    let to = this.byKind.get(route.from);
    if (!to) this.byKind.set(route.from, (to = new Map()));
    to.set(route.to, route);
  }

  private route(from: MemoryKind, to: MemoryKind): CopyRoute | undefined {
    return this.byKind.get(from)?.get(to);
  }

  hasRoute(from: MemoryKind, to: MemoryKind): boolean {
    return this.routes.has(`${from}>${to}`);
  }

  tick(): number {
    return ++this.clock;
  }

  private ensureBuffer(t: Tensor, node: MemoryNode): Replica {
    const r = t.replica(node.index);
    if (!r.buffer) r.buffer = this.memory.alloc(node, t.bytes);
    return r;
  }

  /** True when a read on `node` would need no copy (valid there, or copy already in flight). */
  isLocal(t: Tensor, node: MemoryNode): boolean {
    if (!t.initialized) return node === this.host;
    const r = t.replicas[node.index];
    return !!r && r.state !== 'I';
  }

  /** Bytes that would have to move for `t` to be readable on `node`. */
  missingBytes(t: Tensor, node: MemoryNode): number {
    return this.isLocal(t, node) ? 0 : t.bytes;
  }

  /**
   * Make `t` readable on `node` (copying if needed) and call `done` once it is. Allocation failures
   * and copy errors are reported through `done`.
   */
  acquireRead(t: Tensor, node: MemoryNode, done: Callback): void {
    if (t.lostReason) return done(new TandemError('TANDEM_ERR_DATA_LOST', `${t} was lost: ${t.lostReason}`));
    let r: Replica;
    try {
      r = this.ensureBuffer(t, node);
    } catch (e) {
      return done(e as Error);
    }
    r.lastUse = this.tick();
    if (!t.initialized) {
      if (node === this.host) {
        // A fresh SharedArrayBuffer is zero-filled: that is the tensor's initial value.
        t.initialized = true;
        r.state = 'M';
        return done(null);
      }
      this.acquireRead(t, this.host, (err) => (err ? done(err) : this.acquireRead(t, node, done)));
      return;
    }
    if (r.state !== 'I') {
      if (r.pending) r.pending.push(done);
      else done(null);
      return;
    }
    // Prefer a valid source with a direct route whose copy is not itself still in flight, else any
    // valid source with a route (lowest node index first either way). Scanned in place: no list of
    // valid nodes per read.
    const nodes = this.memory.nodeList;
    const reps = t.replicas;
    let valid = false;
    let srcIndex = -1;
    let busyIndex = -1;
    for (let i = 0; i < reps.length; i++) {
      const ri = reps[i];
      if (!ri || ri.state === 'I') continue;
      valid = true;
      if (!this.route(nodes[i]!.kind, node.kind)) continue;
      if (!ri.pending) {
        srcIndex = i;
        break;
      }
      if (busyIndex < 0) busyIndex = i;
    }
    if (!valid) return done(new TandemError('TANDEM_ERR_INTERNAL', `${t} has no valid replica`));
    if (srcIndex < 0) srcIndex = busyIndex;
    if (srcIndex < 0) {
      if (node === this.host || !this.route('host', node.kind)) {
        return done(new TandemError('TANDEM_ERR_INTERNAL', `no copy route to ${node.name} for ${t}`));
      }
      // No direct route (e.g. CUDA → WebGPU): stage through host memory.
      this.acquireRead(t, this.host, (err) => (err ? done(err) : this.acquireRead(t, node, done)));
      return;
    }
    const src = nodes[srcIndex]!;
    const srcReplica = t.replicas[srcIndex]!;
    const start = (): void => this.copy(t, src, srcReplica, node, r, done);
    if (srcReplica.pending) srcReplica.pending.push((err) => (err ? done(err) : start()));
    else start();
  }

  private copy(
    t: Tensor,
    src: MemoryNode,
    srcReplica: Replica,
    dst: MemoryNode,
    r: Replica,
    done: Callback,
  ): void {
    const route = this.route(src.kind, dst.kind)!;
    if (srcReplica.state === 'M') srcReplica.state = 'S';
    r.state = 'S';
    r.pending = [done];
    srcReplica.users++;
    const engine = route.engine(srcReplica.buffer!, r.buffer!);
    const startUs = nowUs();
    route.copy(srcReplica.buffer!, r.buffer!, t.bytes, (err) => {
      srcReplica.users--;
      const waiters = r.pending ?? [];
      r.pending = null;
      if (err) r.state = 'I';
      else {
        this.bytesMoved += t.bytes;
        this.transfers++;
        this.onTransfer?.(t, src, dst, engine, startUs, nowUs());
      }
      for (const w of waiters) w(err);
    });
  }

  /** Make room for a write on `node`: a buffer exists there; no data needs to move. */
  acquireWrite(t: Tensor, node: MemoryNode): DeviceBuffer {
    if (t.lostReason) throw new TandemError('TANDEM_ERR_DATA_LOST', `${t} was lost: ${t.lostReason}`);
    const r = this.ensureBuffer(t, node);
    r.lastUse = this.tick();
    return r.buffer!;
  }

  /** After a writer is dispatched on `node`: its replica is the only valid one. */
  commitWrite(t: Tensor, node: MemoryNode): void {
    t.initialized = true;
    const reps = t.replicas;
    for (let i = 0; i < reps.length; i++) {
      const r = reps[i];
      if (r) r.state = i === node.index ? 'M' : 'I';
    }
  }

  bufferOn(t: Tensor, node: MemoryNode): DeviceBuffer {
    const b = t.replicas[node.index]?.buffer;
    if (!b) throw new TandemError('TANDEM_ERR_INTERNAL', `${t} has no buffer on ${node.name}`);
    return b;
  }

  /** Release every replica's memory. */
  release(t: Tensor): void {
    for (const r of t.replicas) {
      if (r?.buffer) {
        this.memory.free(r.buffer);
        r.buffer = null;
        r.state = 'I';
      }
    }
  }

  /** A device lost its memory (fault + reset): copies that lived only there are lost. */
  dropNode(tensors: Iterable<Tensor>, node: MemoryNode, reason: string): number {
    let lost = 0;
    for (const t of tensors) {
      const r = t.replicas[node.index];
      if (!r) continue;
      const onlyCopy = r.state === 'M';
      if (r.buffer) this.memory.free(r.buffer);
      r.buffer = null;
      r.state = 'I';
      if (onlyCopy) {
        t.lostReason = reason;
        lost++;
      }
    }
    return lost;
  }
}
